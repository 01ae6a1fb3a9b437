// cost/estimate and cost/catalog: `ferry cost` for the IDE, over the catalog with the workspace
// project's gpuCatalog rows (when there is a project) and its price as the default.
#include "helper/cloud/cost_estimate.hpp"
#include "helper/server/host_methods.hpp"
#include "protocol/messages_cost.hpp"

namespace ferry::server {

namespace p = ferry::protocol;

namespace {

cloud::CostQuery query_of(const p::CostEstimateParams& params) {
  cloud::CostQuery q;
  q.gpu = params.gpu;
  q.instance = params.instance;
  q.provider = params.provider;
  q.usd_per_hour = params.usd_per_hour;
  q.spot_usd_per_hour = params.spot_usd_per_hour;
  q.hours = params.hours;
  return q;
}

// The project is optional: pricing works before any ferry.json exists.
std::expected<std::vector<cloud::GpuOffer>, p::ResponseError> server_catalog(const ServerContext& ctx,
                                                                            std::optional<deploy::ProjectConfig>& project) {
  if (auto config = lookup_project(std::nullopt, ctx.workspace)) project = std::move(*config);
  auto catalog = cloud::effective_catalog(project ? project->gpu_catalog : std::vector<cloud::GpuOffer>{});
  if (!catalog) return std::unexpected(p::ResponseError{p::error_code::kInvalidParams, catalog.error(), {}});
  return std::move(*catalog);
}

std::expected<p::CostEstimateResult, p::ResponseError> estimate_cost(const ServerContext& ctx, const p::CostEstimateParams& params) {
  std::optional<deploy::ProjectConfig> project;
  auto catalog = server_catalog(ctx, project);
  if (!catalog) return std::unexpected(catalog.error());
  p::CostEstimateResult out;
  if (!params.any_selector() && project && project->price) {
    auto rate = cloud::host_rate(*project->price, *catalog);
    if (!rate) return std::unexpected(p::ResponseError{p::error_code::kInvalidParams, "ferry.json /price: " + rate.error(), {}});
    out.estimates.push_back(cloud::to_json(cloud::estimate(*rate, params.hours)));
    return out;
  }
  auto result = cloud::run_query(query_of(params), *catalog);
  if (!result) {
    std::string message = result.error();
    for (auto [flag, key] : {std::pair{"--gpu NAME", "gpu"}, std::pair{"--instance TYPE", "instance"},
                             std::pair{"--price USD_PER_H", "usdPerHour"}, std::pair{"--spot-price", "spotUsdPerHour"}})
      if (auto at = message.find(flag); at != std::string::npos) message.replace(at, std::string_view(flag).size(), key);
    return std::unexpected(p::ResponseError{p::error_code::kInvalidParams, "cost/estimate: " + message, {}});
  }
  for (const auto& e : *result) out.estimates.push_back(cloud::to_json(e));
  return out;
}

}  // namespace

void bind_cost_methods(p::BindingTable& table, const ServerContext& ctx) {
  table.request<p::CostEstimateParams, p::CostEstimateResult>(
      p::method::kCostEstimate,
      [&ctx](const p::CostEstimateParams& params, p::CallContext&) { return estimate_cost(ctx, params); },
      p::Execution::worker);
  table.request<p::CostCatalogParams, p::CostCatalogResult>(
      p::method::kCostCatalog,
      [&ctx](const p::CostCatalogParams& params, p::CallContext&) -> std::expected<p::CostCatalogResult, p::ResponseError> {
        std::optional<deploy::ProjectConfig> project;
        auto catalog = server_catalog(ctx, project);
        if (!catalog) return std::unexpected(catalog.error());
        p::CostCatalogResult out;
        for (const auto& o : *catalog)
          if (!params.gpu || !cloud::find_by_gpu({o}, *params.gpu).empty()) out.offers.push_back(cloud::to_json(o));
        return out;
      },
      p::Execution::worker);
}

}  // namespace ferry::server

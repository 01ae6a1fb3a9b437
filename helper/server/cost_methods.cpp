// cost/estimate and cost/catalog: `ferry cost` for the IDE, over the catalog with the workspace
// project's gpuCatalog rows (when there is a project) and its price as the default.
#include "helper/cloud/cost_estimate.hpp"
#include "helper/server/host_methods.hpp"

namespace ferry::server {

namespace p = ferry::protocol;

namespace {

constexpr std::string_view kCostEstimate = "cost/estimate";
constexpr std::string_view kCostCatalog = "cost/catalog";

struct CostEstimateParams {
  cloud::CostQuery query;
  bool any_selector = false;
};

std::optional<p::DecodeError> from_json(const p::json& j, CostEstimateParams& out, const std::string&) {
  if (!j.is_object()) return p::DecodeError{"", "expected {gpu | instance | usdPerHour, hours}"};
  for (auto [key, field] : {std::pair{"gpu", &out.query.gpu}, std::pair{"instance", &out.query.instance},
                            std::pair{"provider", &out.query.provider}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_string() || it->get_ref<const std::string&>().empty())
      return p::DecodeError{std::string("/") + key, "expected a non-empty string"};
    *field = it->get<std::string>();
  }
  for (auto [key, field] : {std::pair{"usdPerHour", &out.query.usd_per_hour},
                            std::pair{"spotUsdPerHour", &out.query.spot_usd_per_hour}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_number() || !(it->get<double>() > 0)) return p::DecodeError{std::string("/") + key, "expected a price above 0 (USD per hour)"};
    *field = it->get<double>();
  }
  if (auto it = j.find("hours"); it != j.end()) {
    if (!it->is_number() || !(it->get<double>() > 0)) return p::DecodeError{"/hours", "expected a number of hours above 0"};
    out.query.hours = it->get<double>();
  }
  out.any_selector = out.query.gpu || out.query.instance || out.query.usd_per_hour;
  return std::nullopt;
}

struct CostCatalogParams {
  std::optional<std::string> gpu;
};
std::optional<p::DecodeError> from_json(const p::json& j, CostCatalogParams& out, const std::string&) {
  if (j.is_null()) return std::nullopt;
  if (!j.is_object()) return p::DecodeError{"", "expected an object"};
  if (auto it = j.find("gpu"); it != j.end()) {
    if (!it->is_string()) return p::DecodeError{"/gpu", "expected a GPU name"};
    out.gpu = it->get<std::string>();
  }
  return std::nullopt;
}

// The project is optional: pricing works before any ferry.json exists.
std::expected<std::vector<cloud::GpuOffer>, p::ResponseError> server_catalog(const ServerContext& ctx,
                                                                            std::optional<deploy::ProjectConfig>& project) {
  if (auto config = lookup_project(std::nullopt, ctx.workspace)) project = std::move(*config);
  auto catalog = cloud::effective_catalog(project ? project->gpu_catalog : std::vector<cloud::GpuOffer>{});
  if (!catalog) return std::unexpected(p::ResponseError{p::error_code::kInvalidParams, catalog.error(), {}});
  return std::move(*catalog);
}

std::expected<p::json, p::ResponseError> estimate_cost(const ServerContext& ctx, const CostEstimateParams& params) {
  std::optional<deploy::ProjectConfig> project;
  auto catalog = server_catalog(ctx, project);
  if (!catalog) return std::unexpected(catalog.error());
  p::json estimates = p::json::array();
  if (!params.any_selector && project && project->price) {
    auto rate = cloud::host_rate(*project->price, *catalog);
    if (!rate) return std::unexpected(p::ResponseError{p::error_code::kInvalidParams, "ferry.json /price: " + rate.error(), {}});
    estimates.push_back(cloud::to_json(cloud::estimate(*rate, params.query.hours)));
    return p::json{{"estimates", std::move(estimates)}};
  }
  auto result = cloud::run_query(params.query, *catalog);
  if (!result) {
    std::string message = result.error();
    for (auto [flag, key] : {std::pair{"--gpu NAME", "gpu"}, std::pair{"--instance TYPE", "instance"},
                             std::pair{"--price USD_PER_H", "usdPerHour"}, std::pair{"--spot-price", "spotUsdPerHour"}})
      if (auto at = message.find(flag); at != std::string::npos) message.replace(at, std::string_view(flag).size(), key);
    return std::unexpected(p::ResponseError{p::error_code::kInvalidParams, "cost/estimate: " + message, {}});
  }
  for (const auto& e : *result) estimates.push_back(cloud::to_json(e));
  return p::json{{"estimates", std::move(estimates)}};
}

}  // namespace

void bind_cost_methods(p::BindingTable& table, const ServerContext& ctx) {
  table.request<CostEstimateParams, p::json>(
      kCostEstimate, [&ctx](const CostEstimateParams& params, p::CallContext&) { return estimate_cost(ctx, params); },
      p::Execution::worker);
  table.request<CostCatalogParams, p::json>(
      kCostCatalog,
      [&ctx](const CostCatalogParams& params, p::CallContext&) -> std::expected<p::json, p::ResponseError> {
        std::optional<deploy::ProjectConfig> project;
        auto catalog = server_catalog(ctx, project);
        if (!catalog) return std::unexpected(catalog.error());
        p::json offers = p::json::array();
        for (const auto& o : *catalog)
          if (!params.gpu || !cloud::find_by_gpu({o}, *params.gpu).empty()) offers.push_back(cloud::to_json(o));
        return p::json{{"offers", std::move(offers)}};
      },
      p::Execution::worker);
}

}  // namespace ferry::server

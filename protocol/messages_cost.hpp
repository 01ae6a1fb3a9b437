// Typed params and results of the IDE's cost/* methods (cost/estimate, cost/catalog): `ferry
// cost` over the GPU catalog, with the workspace project's rows and price.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/json_reader.hpp"

namespace ferry::protocol {

using json = nlohmann::json;

namespace method {
inline constexpr std::string_view kCostEstimate = "cost/estimate";
inline constexpr std::string_view kCostCatalog = "cost/catalog";
}  // namespace method

// {gpu | instance | usdPerHour, provider?, spotUsdPerHour?, hours?}; with no selector the
// project's `price` is estimated.
struct CostEstimateParams {
  std::optional<std::string> gpu;
  std::optional<std::string> instance;
  std::optional<std::string> provider;
  std::optional<double> usd_per_hour;
  std::optional<double> spot_usd_per_hour;
  double hours = 1;
  bool any_selector() const { return gpu || instance || usd_per_hour; }
};
std::optional<DecodeError> from_json(const json& j, CostEstimateParams& out, const std::string& ptr = "");

struct CostCatalogParams {
  std::optional<std::string> gpu;  // only the offers of this GPU
};
std::optional<DecodeError> from_json(const json& j, CostCatalogParams& out, const std::string& ptr = "");

// Each row is helper/cloud's document (cloud::to_json of a CostEstimate or a GpuOffer), the same
// one `ferry cost --json` prints and ferry.json's gpuCatalog holds: its shape belongs to the
// cloud layer, which protocol/ sits below, so the rows stay json here.
struct CostEstimateResult {
  std::vector<json> estimates;
};
json to_json(const CostEstimateResult& r);

struct CostCatalogResult {
  std::vector<json> offers;
};
json to_json(const CostCatalogResult& r);

}  // namespace ferry::protocol

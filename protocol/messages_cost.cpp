// Typed cost/* messages: see messages_cost.hpp.
#include "protocol/messages_cost.hpp"

namespace ferry::protocol {

namespace {

json rows(const std::vector<json>& list) {
  json out = json::array();
  for (const auto& r : list) out.push_back(r);
  return out;
}

}  // namespace

std::optional<DecodeError> from_json(const json& j, CostEstimateParams& out, const std::string&) {
  if (!j.is_object()) return DecodeError{"", "expected {gpu | instance | usdPerHour, hours}"};
  for (auto [key, field] : {std::pair{"gpu", &out.gpu}, std::pair{"instance", &out.instance}, std::pair{"provider", &out.provider}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_string() || it->get_ref<const std::string&>().empty())
      return DecodeError{std::string("/") + key, "expected a non-empty string"};
    *field = it->get<std::string>();
  }
  for (auto [key, field] : {std::pair{"usdPerHour", &out.usd_per_hour}, std::pair{"spotUsdPerHour", &out.spot_usd_per_hour}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_number() || !(it->get<double>() > 0)) return DecodeError{std::string("/") + key, "expected a price above 0 (USD per hour)"};
    *field = it->get<double>();
  }
  if (auto it = j.find("hours"); it != j.end()) {
    if (!it->is_number() || !(it->get<double>() > 0)) return DecodeError{"/hours", "expected a number of hours above 0"};
    out.hours = it->get<double>();
  }
  return std::nullopt;
}

std::optional<DecodeError> from_json(const json& j, CostCatalogParams& out, const std::string&) {
  if (j.is_null()) return std::nullopt;
  if (!j.is_object()) return DecodeError{"", "expected an object"};
  if (auto it = j.find("gpu"); it != j.end()) {
    if (!it->is_string()) return DecodeError{"/gpu", "expected a GPU name"};
    out.gpu = it->get<std::string>();
  }
  return std::nullopt;
}

json to_json(const CostEstimateResult& r) { return {{"estimates", rows(r.estimates)}}; }

json to_json(const CostCatalogResult& r) { return {{"offers", rows(r.offers)}}; }

}  // namespace ferry::protocol

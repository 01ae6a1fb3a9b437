// Cost arithmetic: what a job of H hours costs at an on-demand and a spot price, in whole cents,
// and the host's price (ferry.json `price`) as a rate for live run costs.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "helper/cloud/gpu_catalog.hpp"

namespace ferry::cloud {

// A price to estimate with: the offer it came from, or a bare price given by the user.
struct Rate {
  std::string label;  // "aws p3.2xlarge (1x V100, 16 GiB)" or "custom price"
  double on_demand_usd_per_hour = 0;
  std::optional<double> spot_usd_per_hour;
  std::optional<GpuOffer> offer;
};
Rate rate_of(const GpuOffer& offer);
std::string describe(const GpuOffer& offer);  // "aws p3.2xlarge (1x V100, 16 GiB)"

struct CostEstimate {
  Rate rate;
  double hours = 0;
  std::int64_t on_demand_cents = 0;
  std::optional<std::int64_t> spot_cents;
  std::optional<double> spot_saved_percent;  // of the on-demand cost
};

// Rounded to the cent once, at the end (3.06 $/h x 20 h = $61.20, not $61.199999).
std::int64_t cost_cents(double usd_per_hour, double hours);
CostEstimate estimate(const Rate& rate, double hours);

std::string format_usd(std::int64_t cents);       // "$61.20", "$1,234.50"
std::string format_rate(double usd_per_hour);     // "$3.06/h", "$0.1578/h"
nlohmann::json to_json(const CostEstimate& e);
// The lines `ferry cost` prints for one estimate.
std::string format_estimate(const CostEstimate& e);

// "20", "20h", "90m", "1.5h", "45s" -> hours; the error says what is accepted.
std::expected<double, std::string> parse_hours(const std::string& text);

}  // namespace ferry::cloud

namespace ferry::cloud {

// ferry.json's `price`: what the project's host bills. A catalog instance, or a price of its own
// (which wins over the instance's), billed on demand or as spot.
struct HostPrice {
  std::optional<std::string> instance;
  std::optional<std::string> provider;
  std::optional<double> usd_per_hour;
  std::optional<double> spot_usd_per_hour;
  bool spot = false;  // "market": "spot"
};
// The rate the host bills per hour; the error says which instance is unknown and how to fix it.
std::expected<Rate, std::string> host_rate(const HostPrice& price, const std::vector<GpuOffer>& catalog);
// What the host costs per hour on its market (spot when `price.spot` and a spot price is known).
double billed_usd_per_hour(const Rate& rate, const HostPrice& price);

}  // namespace ferry::cloud

namespace ferry::cloud {

// What `ferry cost` and cost/estimate ask: one of gpu, instance or a price, and the hours.
struct CostQuery {
  std::optional<std::string> gpu;
  std::optional<std::string> instance;
  std::optional<std::string> provider;
  std::optional<double> usd_per_hour;
  std::optional<double> spot_usd_per_hour;
  double hours = 1;
};
// One estimate per matching offer (a GPU name can match several), cheapest on demand first.
std::expected<std::vector<CostEstimate>, std::string> run_query(const CostQuery& q, const std::vector<GpuOffer>& catalog);
// The catalog as the table `ferry cost catalog` prints.
std::string format_catalog(const std::vector<const GpuOffer*>& offers);

}  // namespace ferry::cloud

namespace ferry::cloud {
// "2026-11-30T02:03:04.567Z" (the agent's run times) -> seconds since the epoch.
std::optional<double> parse_iso_utc(const std::string& iso);
}  // namespace ferry::cloud

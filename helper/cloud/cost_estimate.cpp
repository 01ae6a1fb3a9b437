// Cost arithmetic: see cost_estimate.hpp.
#include "helper/cloud/cost_estimate.hpp"

#include <chrono>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

namespace ferry::cloud {

using json = nlohmann::json;

std::string describe(const GpuOffer& o) {
  std::string mem = std::fmod(o.gpu_memory_gib, 1.0) == 0 ? fmt::format("{:.0f}", o.gpu_memory_gib)
                                                           : fmt::format("{:.1f}", o.gpu_memory_gib);
  return fmt::format("{} {} ({}x {}, {} GiB each)", o.provider, o.instance, o.gpu_count, o.gpu, mem);
}

Rate rate_of(const GpuOffer& offer) { return Rate{describe(offer), offer.on_demand_usd_per_hour, offer.spot_usd_per_hour, offer}; }

std::int64_t cost_cents(double usd_per_hour, double hours) {
  // Products like 3.06 x 20 land a hair under the cent (61.199999...): round once, to the
  // nearest cent, as a bill does.
  return static_cast<std::int64_t>(std::llround(usd_per_hour * hours * 100.0));
}

CostEstimate estimate(const Rate& rate, double hours) {
  CostEstimate e{rate, hours, cost_cents(rate.on_demand_usd_per_hour, hours), std::nullopt, std::nullopt};
  if (rate.spot_usd_per_hour) {
    e.spot_cents = cost_cents(*rate.spot_usd_per_hour, hours);
    if (e.on_demand_cents > 0)
      e.spot_saved_percent = 100.0 * static_cast<double>(e.on_demand_cents - *e.spot_cents) / static_cast<double>(e.on_demand_cents);
  }
  return e;
}

std::string format_usd(std::int64_t cents) {
  const bool negative = cents < 0;
  std::int64_t whole = std::llabs(cents) / 100;
  std::string digits = std::to_string(whole);
  std::string grouped;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return fmt::format("{}${}.{:02}", negative ? "-" : "", grouped, std::llabs(cents) % 100);
}

std::string format_rate(double usd_per_hour) {
  // Cents when the price is whole cents ($3.06/h), else as many digits as the catalog gives.
  if (std::fabs(usd_per_hour * 100 - std::round(usd_per_hour * 100)) < 1e-9) return fmt::format("${:.2f}/h", usd_per_hour);
  std::string digits = fmt::format("{:.4f}", usd_per_hour);
  while (digits.back() == '0') digits.pop_back();  // $0.526/h, not $0.5260/h
  return "$" + digits + "/h";
}

json to_json(const CostEstimate& e) {
  json j{{"label", e.rate.label}, {"hours", e.hours}, {"onDemandUsdPerHour", e.rate.on_demand_usd_per_hour},
         {"onDemandUsd", static_cast<double>(e.on_demand_cents) / 100.0}, {"onDemandCents", e.on_demand_cents}};
  if (e.rate.offer) j["offer"] = to_json(*e.rate.offer);
  if (e.rate.spot_usd_per_hour) {
    j["spotUsdPerHour"] = *e.rate.spot_usd_per_hour;
    j["spotUsd"] = static_cast<double>(*e.spot_cents) / 100.0;
    j["spotCents"] = *e.spot_cents;
    if (e.spot_saved_percent) j["spotSavedPercent"] = std::round(*e.spot_saved_percent * 10) / 10;
  }
  return j;
}

std::string format_estimate(const CostEstimate& e) {
  std::string hours = std::fmod(e.hours, 1.0) == 0 ? fmt::format("{:.0f}", e.hours) : fmt::format("{:g}", e.hours);
  std::string out = fmt::format("{} for {} h\n", e.rate.label, hours);
  out += fmt::format("  on demand  {:>11}  {:>10}\n", format_rate(e.rate.on_demand_usd_per_hour), format_usd(e.on_demand_cents));
  if (e.spot_cents) {
    out += fmt::format("  spot       {:>11}  {:>10}", format_rate(*e.rate.spot_usd_per_hour), format_usd(*e.spot_cents));
    if (e.spot_saved_percent) out += fmt::format("  ({:.1f} % saved)", *e.spot_saved_percent);
    out += "\n";
  }
  return out;
}

std::expected<double, std::string> parse_hours(const std::string& text) {
  const std::string why = "expected a duration: hours as a number (20, 1.5) or with a unit (90m, 2h, 45s)";
  if (text.empty()) return std::unexpected(why);
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  std::string unit(end);
  if (end == text.c_str() || !std::isfinite(v) || v <= 0) return std::unexpected("'" + text + "': " + why);
  double scale = unit.empty() || unit == "h" ? 1.0 : unit == "m" ? 1.0 / 60 : unit == "s" ? 1.0 / 3600 : unit == "d" ? 24.0 : -1;
  if (scale < 0) return std::unexpected("'" + text + "': " + why);
  return v * scale;
}

std::expected<Rate, std::string> host_rate(const HostPrice& price, const std::vector<GpuOffer>& catalog) {
  Rate rate{"custom price", 0, std::nullopt, std::nullopt};
  if (price.instance) {
    auto found = find_by_instance(catalog, *price.instance, price.provider.value_or(""));
    if (found.empty())
      return std::unexpected("instance \"" + *price.instance + "\" is not in the GPU catalog (`ferry cost catalog` lists "
                             "it; add a row to ferry.json's gpuCatalog, or give usdPerHour)");
    if (found.size() > 1)
      return std::unexpected("instance \"" + *price.instance + "\" is offered by several providers: add \"provider\"");
    rate = rate_of(*found.front());
  }
  if (price.usd_per_hour) rate.on_demand_usd_per_hour = *price.usd_per_hour;
  if (price.spot_usd_per_hour) rate.spot_usd_per_hour = *price.spot_usd_per_hour;
  if (rate.on_demand_usd_per_hour <= 0) return std::unexpected("the price names neither an instance nor usdPerHour");
  return rate;
}

double billed_usd_per_hour(const Rate& rate, const HostPrice& price) {
  return price.spot && rate.spot_usd_per_hour ? *rate.spot_usd_per_hour : rate.on_demand_usd_per_hour;
}

}  // namespace ferry::cloud

namespace ferry::cloud {

std::expected<std::vector<CostEstimate>, std::string> run_query(const CostQuery& q, const std::vector<GpuOffer>& catalog) {
  const int given = (q.gpu ? 1 : 0) + (q.instance ? 1 : 0) + (q.usd_per_hour ? 1 : 0);
  if (given != 1) return std::unexpected("give exactly one of --gpu NAME, --instance TYPE or --price USD_PER_H");
  if (q.spot_usd_per_hour && !q.usd_per_hour) return std::unexpected("--spot-price goes with --price (catalog rows carry their own)");
  if (!(q.hours > 0)) return std::unexpected("the hours must be above 0");
  std::vector<CostEstimate> out;
  if (q.usd_per_hour) {
    if (!(*q.usd_per_hour > 0) || (q.spot_usd_per_hour && !(*q.spot_usd_per_hour > 0)))
      return std::unexpected("prices must be above 0 (USD per hour)");
    out.push_back(estimate(Rate{"custom price", *q.usd_per_hour, q.spot_usd_per_hour, std::nullopt}, q.hours));
    return out;
  }
  auto found = q.gpu ? find_by_gpu(catalog, *q.gpu) : find_by_instance(catalog, *q.instance, q.provider.value_or(""));
  if (q.gpu && q.provider)
    std::erase_if(found, [&](const GpuOffer* o) { return o->provider != *q.provider; });
  if (found.empty())
    return std::unexpected(std::string("no catalog offer for ") + (q.gpu ? "GPU \"" + *q.gpu : "instance \"" + *q.instance) +
                           "\" (`ferry cost catalog` lists the offers; add your own in ferry.json's gpuCatalog or " +
                           user_catalog_path().string() + ")");
  for (const auto* o : found) out.push_back(estimate(rate_of(*o), q.hours));
  std::stable_sort(out.begin(), out.end(),
                   [](const CostEstimate& a, const CostEstimate& b) { return a.on_demand_cents < b.on_demand_cents; });
  return out;
}

std::string format_catalog(const std::vector<const GpuOffer*>& offers) {
  std::string out = fmt::format("{:<8} {:<20} {:<11} {:>4} {:>8} {:>12} {:>12}  {:<10} {}\n", "PROVIDER", "INSTANCE", "GPU",
                                "GPUS", "GiB/GPU", "ON DEMAND", "SPOT", "DATE", "SOURCE");
  for (const auto* o : offers)
    out += fmt::format("{:<8} {:<20} {:<11} {:>4} {:>8g} {:>12} {:>12}  {:<10} {}\n", o->provider, o->instance, o->gpu,
                       o->gpu_count, o->gpu_memory_gib, format_rate(o->on_demand_usd_per_hour),
                       o->spot_usd_per_hour ? format_rate(*o->spot_usd_per_hour) : std::string("-"), o->date,
                       o->origin == "built-in" ? o->source : o->source + " (" + o->origin + ")");
  return out;
}

}  // namespace ferry::cloud

namespace ferry::cloud {

std::optional<double> parse_iso_utc(const std::string& iso) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, &ms) < 6)
    return std::nullopt;
  // Civil date to seconds by <chrono>'s calendar (timegm is not on every platform).
  using namespace std::chrono;
  const sys_days date = year{tm.tm_year} / month{static_cast<unsigned>(tm.tm_mon)} / day{static_cast<unsigned>(tm.tm_mday)};
  const auto at = date + hours{tm.tm_hour} + minutes{tm.tm_min} + seconds{tm.tm_sec};
  return static_cast<double>(at.time_since_epoch().count()) + ms / 1000.0;
}

}  // namespace ferry::cloud

// The GPU offer catalog: see gpu_catalog.hpp.
#include "helper/cloud/gpu_catalog.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <regex>

#include "common/user_dirs.hpp"
#include "protocol/json_parse.hpp"

namespace ferry::protocol {
std::string_view gpu_catalog_text();  // generated from gpu_catalog.json (protocol/embed_text.cmake)
}

namespace ferry::cloud {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string lower_compact(std::string_view s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::expected<std::string, std::string> text_field(const json& row, const std::string& p, const char* key, bool required) {
  auto it = row.find(key);
  if (it == row.end()) {
    if (required) return std::unexpected(p + "/" + key + ": expected a non-empty string (required)");
    return std::string();
  }
  if (!it->is_string() || it->get_ref<const std::string&>().empty())
    return std::unexpected(p + "/" + key + ": expected a non-empty string");
  return it->get<std::string>();
}

std::expected<std::optional<double>, std::string> positive(const json& row, const std::string& p, const char* key,
                                                           bool required, const char* what) {
  auto it = row.find(key);
  if (it == row.end()) {
    if (required) return std::unexpected(p + "/" + key + ": expected " + what + " (required)");
    return std::optional<double>();
  }
  if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() > 1e6)
    return std::unexpected(p + "/" + key + ": expected " + what + ", a number above 0");
  return std::optional<double>(it->get<double>());
}

}  // namespace

std::expected<GpuOffer, std::string> parse_offer(const json& row, const std::string& p, const std::string& origin) {
  static const std::vector<std::string> keys{"provider", "instance", "gpu", "gpuCount", "gpuMemoryGiB", "region",
                                             "onDemandUsdPerHour", "spotUsdPerHour", "source", "date"};
  if (!row.is_object()) return std::unexpected(p + ": expected an object (one GPU offer)");
  for (const auto& [key, value] : row.items())
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      return std::unexpected(p + "/" + key + ": unknown key (a row has provider, instance, gpu, gpuCount, gpuMemoryGiB, "
                                             "region, onDemandUsdPerHour, spotUsdPerHour, source, date)");
  GpuOffer o;
  o.origin = origin;
  for (auto [key, out, required] : {std::tuple{"provider", &o.provider, true}, std::tuple{"instance", &o.instance, true},
                                    std::tuple{"gpu", &o.gpu, true}, std::tuple{"region", &o.region, false},
                                    std::tuple{"source", &o.source, true}, std::tuple{"date", &o.date, true}}) {
    auto v = text_field(row, p, key, required);
    if (!v) return std::unexpected(v.error());
    *out = *v;
  }
  std::transform(o.provider.begin(), o.provider.end(), o.provider.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const std::regex date_re("^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$");
  if (!std::regex_match(o.date, date_re))
    return std::unexpected(p + "/date: expected the date the prices were read, as YYYY-MM-DD");
  auto mem = positive(row, p, "gpuMemoryGiB", true, "the GPU memory in GiB");
  if (!mem) return std::unexpected(mem.error());
  o.gpu_memory_gib = **mem;
  auto od = positive(row, p, "onDemandUsdPerHour", true, "the on-demand price in USD per hour");
  if (!od) return std::unexpected(od.error());
  o.on_demand_usd_per_hour = **od;
  auto spot = positive(row, p, "spotUsdPerHour", false, "the spot price in USD per hour");
  if (!spot) return std::unexpected(spot.error());
  o.spot_usd_per_hour = *spot;
  if (auto it = row.find("gpuCount"); it != row.end()) {
    if (!it->is_number_integer() || it->get<int>() < 1 || it->get<int>() > 64)
      return std::unexpected(p + "/gpuCount: expected a whole number of GPUs from 1 to 64");
    o.gpu_count = it->get<int>();
  }
  return o;
}

json to_json(const GpuOffer& o) {
  json j{{"provider", o.provider}, {"instance", o.instance}, {"gpu", o.gpu}, {"gpuCount", o.gpu_count},
         {"gpuMemoryGiB", o.gpu_memory_gib}, {"onDemandUsdPerHour", o.on_demand_usd_per_hour},
         {"source", o.source}, {"date", o.date}, {"origin", o.origin}};
  if (!o.region.empty()) j["region"] = o.region;
  if (o.spot_usd_per_hour) j["spotUsdPerHour"] = *o.spot_usd_per_hour;
  return j;
}

std::expected<std::vector<GpuOffer>, std::string> parse_catalog(const json& doc, const std::string& origin) {
  const json* rows = &doc;
  std::string base;
  if (doc.is_object()) {
    auto it = doc.find("offers");
    if (it == doc.end()) return std::unexpected(origin + ": expected {\"offers\": [rows]}");
    rows = &*it;
    base = "/offers";
  }
  if (!rows->is_array()) return std::unexpected(origin + ": " + (base.empty() ? "" : base + ": ") + "expected an array of offers");
  std::vector<GpuOffer> out;
  for (std::size_t i = 0; i < rows->size(); ++i) {
    auto o = parse_offer((*rows)[i], base + "/" + std::to_string(i), origin);
    if (!o) return std::unexpected(origin + ": " + o.error());
    out.push_back(std::move(*o));
  }
  return out;
}

const std::vector<GpuOffer>& builtin_catalog() {
  static const std::vector<GpuOffer> catalog = [] {
    // Built in and tested (test_gpu_catalog): a parse failure is the build's bug, stopped below.
    auto parsed = parse_catalog(protocol::parse_json_text(protocol::gpu_catalog_text()).value_or(json()), "built-in");
    // The build's own test (test_gpu_catalog) validates the file; a broken one must not ship.
    if (!parsed) std::abort();
    return std::move(*parsed);
  }();
  return catalog;
}

fs::path user_catalog_path() {
  if (const char* f = std::getenv("FERRY_GPU_CATALOG"); f && *f) return f;
  return platform::config_home().value_or(fs::path(".config")) / "ferry" / "gpu-catalog.json";
}

void merge_offers(std::vector<GpuOffer>& base, const std::vector<GpuOffer>& extra) {
  for (const auto& e : extra) {
    auto same = std::find_if(base.begin(), base.end(), [&](const GpuOffer& b) {
      return b.provider == e.provider && lower_compact(b.instance) == lower_compact(e.instance);
    });
    if (same != base.end()) *same = e;
    else base.push_back(e);
  }
}

std::expected<std::vector<GpuOffer>, std::string> effective_catalog(const std::vector<GpuOffer>& project_rows) {
  std::vector<GpuOffer> out = builtin_catalog();
  const fs::path user = user_catalog_path();
  std::error_code ec;
  if (fs::exists(user, ec)) {
    std::ifstream in(user);
    auto doc = protocol::parse_json_text(std::string(std::istreambuf_iterator<char>(in), {}));
    if (!doc)
      return std::unexpected(user.string() + ": not valid JSON (" + doc.error().to_string() +
                             "; fix it, or remove it to use the built-in catalog)");
    auto rows = parse_catalog(*doc, user.string());
    if (!rows) return std::unexpected(rows.error());
    merge_offers(out, *rows);
  }
  merge_offers(out, project_rows);
  return out;
}

std::vector<const GpuOffer*> find_by_gpu(const std::vector<GpuOffer>& catalog, const std::string& gpu) {
  std::vector<const GpuOffer*> out;
  const std::string want = lower_compact(gpu);
  for (const auto& o : catalog)
    if (lower_compact(o.gpu).find(want) != std::string::npos) out.push_back(&o);
  return out;
}

std::vector<const GpuOffer*> find_by_instance(const std::vector<GpuOffer>& catalog, const std::string& instance,
                                              const std::string& provider) {
  std::vector<const GpuOffer*> out;
  for (const auto& o : catalog)
    if (lower_compact(o.instance) == lower_compact(instance) && (provider.empty() || o.provider == lower_compact(provider)))
      out.push_back(&o);
  return out;
}

}  // namespace ferry::cloud

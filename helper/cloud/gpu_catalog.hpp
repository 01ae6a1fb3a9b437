// The GPU offer catalog: instance types with their GPUs and $/h prices (gpu_catalog.json, built
// in), validated row by row, with rows added or overridden by the user file and ferry.json.
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::cloud {

// One rentable instance type. Prices are USD per hour for the whole instance.
struct GpuOffer {
  std::string provider;   // "aws", "gcp", ... (lower case)
  std::string instance;   // the provider's instance type name
  std::string gpu;        // "V100", "A100 80GB", ...
  int gpu_count = 1;
  double gpu_memory_gib = 0;  // per GPU
  std::string region;
  double on_demand_usd_per_hour = 0;
  std::optional<double> spot_usd_per_hour;
  std::string source;     // where the prices were read (URL or note)
  std::string date;       // when: YYYY-MM-DD
  std::string origin;     // "built-in", the user file's path, or "ferry.json"
};

// One row from JSON; the error names the pointer under `pointer` and what was expected.
std::expected<GpuOffer, std::string> parse_offer(const nlohmann::json& row, const std::string& pointer,
                                                 const std::string& origin);
nlohmann::json to_json(const GpuOffer& offer);

// {"offers": [...]} (or a bare array) -> rows; the first bad row is the error.
std::expected<std::vector<GpuOffer>, std::string> parse_catalog(const nlohmann::json& doc, const std::string& origin);

// The catalog compiled into ferry (gpu_catalog.json).
const std::vector<GpuOffer>& builtin_catalog();

// $FERRY_GPU_CATALOG, else $XDG_CONFIG_HOME/ferry/gpu-catalog.json, else ~/.config/ferry/gpu-catalog.json.
std::filesystem::path user_catalog_path();

// Rows of `extra` replace rows of `base` with the same provider and instance (case-insensitive)
// and are appended otherwise.
void merge_offers(std::vector<GpuOffer>& base, const std::vector<GpuOffer>& extra);

// Built-in + the user file (if present) + `project_rows` (ferry.json's gpuCatalog, already
// parsed). A broken user file is an error naming it, not silently skipped.
std::expected<std::vector<GpuOffer>, std::string> effective_catalog(const std::vector<GpuOffer>& project_rows = {});

// Offers whose GPU name contains `gpu` (case-insensitive, spaces ignored: "a100" matches both
// A100s, "a10080gb" the 80 GB one).
std::vector<const GpuOffer*> find_by_gpu(const std::vector<GpuOffer>& catalog, const std::string& gpu);
// The instance type (case-insensitive); `provider` narrows when several providers share a name.
std::vector<const GpuOffer*> find_by_instance(const std::vector<GpuOffer>& catalog, const std::string& instance,
                                              const std::string& provider = "");

}  // namespace ferry::cloud

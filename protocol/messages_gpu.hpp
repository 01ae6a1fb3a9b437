// Typed params and results of the IDE's gpu/* methods (gpu/status, gpu/watch, gpu/unwatch) and
// the gpu/sample notification that gpu/watch sends.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/json_reader.hpp"
#include "protocol/slurm_alloc.hpp"

namespace ferry::protocol {

using json = nlohmann::json;

namespace method {
inline constexpr std::string_view kGpuStatus = "gpu/status";
inline constexpr std::string_view kGpuWatch = "gpu/watch";
inline constexpr std::string_view kGpuUnwatch = "gpu/unwatch";
inline constexpr std::string_view kGpuSample = "gpu/sample";  // server -> client notification
}  // namespace method

struct GpuWatchParams {
  int interval_ms = 1000;  // 200 .. 3600000
};
std::optional<DecodeError> from_json(const json& j, GpuWatchParams& out, const std::string& ptr = "");

// A running run's cost so far at the host's price.
struct GpuRunCost {
  std::string id;
  double cost_usd = 0;
};

// The agent's gpu/status answer ({gpus, host, ...}: remote-runtime/agent/gpu_methods.cpp writes
// it from NVML and /proc, and the helper passes it on untouched, so it stays json here) plus the
// money, when the project has a `price`: usdPerHour and each running run's cost.
// On a Slurm project, where the price would be: its allocation (`ferry alloc`) if one is held,
// with the seconds left before its time limit (as of this answer).
struct GpuSlurmStatus {
  std::optional<SlurmJobInfo> allocation;
  std::optional<long> seconds_left;
};

struct GpuStatusResult {
  json agent = json::object();
  std::optional<double> usd_per_hour;
  std::optional<std::vector<GpuRunCost>> runs;
  std::optional<GpuSlurmStatus> slurm;
};
json to_json(const GpuStatusResult& r);
std::optional<DecodeError> from_json(const json& j, GpuStatusResult& out, const std::string& ptr = "");

// gpu/sample: a status, or the error that ended the watch.
struct GpuSampleParams {
  std::optional<GpuStatusResult> status;
  std::string error;
};
json to_json(const GpuSampleParams& p);

struct GpuWatchResult {
  bool watching = true;
  int interval_ms = 0;
};
json to_json(const GpuWatchResult& r);

struct GpuUnwatchResult {
  bool was_watching = false;
};
json to_json(const GpuUnwatchResult& r);

}  // namespace ferry::protocol

// Typed params and results of the IDE's train/* methods (train/start, train/stop) and their
// notifications (train/metrics, train/exited).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/json_reader.hpp"
#include "protocol/messages_sync.hpp"

namespace ferry::protocol {

using json = nlohmann::json;

namespace method {
inline constexpr std::string_view kTrainStart = "train/start";
inline constexpr std::string_view kTrainStop = "train/stop";
inline constexpr std::string_view kTrainMetrics = "train/metrics";  // server -> client notification
inline constexpr std::string_view kTrainExited = "train/exited";    // server -> client notification
}  // namespace method

struct TrainStartParams {
  std::optional<std::string> path;  // the project (ferry.json or its directory)
  std::string config;               // the config file: absolute, or relative to the project root
  bool resume = false;
  bool sync = true;
  std::optional<std::string> trainer;  // ferry-train on the box
};
std::optional<DecodeError> from_json(const json& j, TrainStartParams& out, const std::string& ptr = "");

struct TrainStopParams {
  std::string run_id;
  std::string signal = "INT";  // INT | TERM | KILL
};
std::optional<DecodeError> from_json(const json& j, TrainStopParams& out, const std::string& ptr = "");

struct TrainStartResult {
  std::string run_id;
  std::vector<std::string> argv;
  std::string cwd;
  std::string host;
  std::optional<SyncResult> sync;  // the push before the start, when there was one
};
json to_json(const TrainStartResult& r);

// train/metrics: one event line of ferry-train, as it printed it.
struct TrainMetricsParams {
  std::string run_id;
  json event;
};
json to_json(const TrainMetricsParams& p);

// train/exited: how the training ended and what was pulled, or why following it failed.
struct TrainExitedParams {
  std::string run_id;
  std::optional<std::string> error;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::optional<int> status;
  std::optional<std::vector<std::string>> outputs;  // local paths of the pulled plot, CSV, checkpoint
  std::vector<std::string> notes;                   // what was not pulled, and why (absent when none)
};
json to_json(const TrainExitedParams& p);

}  // namespace ferry::protocol

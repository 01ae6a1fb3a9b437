// Typed params and results of the IDE's run/* methods (run/start, run/attach, run/detach,
// run/input, run/signal, run/resize, run/list) and their notifications (run/output, run/exited).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/json_reader.hpp"
#include "protocol/slurm_job.hpp"

namespace ferry::protocol {

using json = nlohmann::json;

namespace method {
inline constexpr std::string_view kRunStart = "run/start";
inline constexpr std::string_view kRunAttach = "run/attach";
inline constexpr std::string_view kRunDetach = "run/detach";
inline constexpr std::string_view kRunInput = "run/input";
inline constexpr std::string_view kRunSignal = "run/signal";
inline constexpr std::string_view kRunResize = "run/resize";
inline constexpr std::string_view kRunList = "run/list";
inline constexpr std::string_view kRunOutput = "run/output";  // server -> client notification
inline constexpr std::string_view kRunExited = "run/exited";  // server -> client notification
}  // namespace method

// A run's state as the agent reports it ("running", "exited", "lost"); anything else is `unknown`
// and goes back on the wire as it came.
enum class RunState { running, exited, lost, unknown };
std::string_view to_string(RunState s);
RunState run_state_from_string(std::string_view s);

struct RunStartParams {
  std::optional<std::string> path;  // the project
  std::vector<std::string> argv;    // as after `ferry run --`
  std::string cwd;                  // relative to the mapping root
  std::map<std::string, std::string> env;
  bool tty = false;
  int cols = 0, rows = 0;
};
std::optional<DecodeError> from_json(const json& j, RunStartParams& out, const std::string& ptr = "");

// The params of the methods that name a run: each reads the fields it needs.
struct RunIdParams {
  std::string id;
  std::uint64_t offset = 0;                // run/attach
  std::string signal;                      // run/signal: a name or a number ("" = INT)
  std::optional<std::string> text, base64;  // run/input
  bool eof = false;                        // run/input
  int cols = 0, rows = 0;                  // run/resize
  // run/attach, run/signal of a run this server does not follow: the project whose host has it
  // (none: the workspace project's).
  std::optional<std::string> path;
};
std::optional<DecodeError> from_json(const json& j, RunIdParams& out, const std::string& ptr = "");

struct RunListParams {
  std::optional<std::string> path;
  bool all = false;
};
std::optional<DecodeError> from_json(const json& j, RunListParams& out, const std::string& ptr = "");

struct RunStartResult {
  std::string id;
  long long pid = 0;
  std::string started_at;
  std::vector<std::string> argv;
  std::string cwd;
};
json to_json(const RunStartResult& r);

struct RunAttachResult {
  std::string id;
  std::uint64_t offset = 0;
  std::string state;  // "running" | "exited" | "lost"
};
json to_json(const RunAttachResult& r);

struct RunListEntry {
  std::string id;
  std::vector<std::string> argv;
  std::string cwd;
  std::string root;
  std::string state;
  long long pid = 0;
  std::string started_at;
  std::uint64_t log_bytes = 0;
  std::string ended_at;  // absent while running
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string slurm_job;  // the run is this Slurm job (docs/slurm.md); absent when ""
  std::optional<SlurmJobState> slurm_state;  // where that job stands, as its follower last saw it
  std::optional<bool> followed;  // running runs: whether a live ferry follows it (the agent says)
};
struct RunListResult {
  std::vector<RunListEntry> runs;
};
json to_json(const RunListResult& r);

// run/exited: how a followed run ended, or why following it failed (`error`, status 255).
struct RunExitedParams {
  std::string id;
  int status = 0;
  std::optional<std::string> ended_at;
  std::optional<std::uint64_t> log_bytes;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::optional<std::string> error;
};
json to_json(const RunExitedParams& p);

}  // namespace ferry::protocol

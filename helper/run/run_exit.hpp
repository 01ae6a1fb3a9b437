// How a run ended and what ferry's own exit status becomes (the remote code, 128+signal as a
// shell reports it, 255 for ferry's own failures), and signal names both ways.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/jsonrpc.hpp"

namespace ferry::run {

using protocol::json;

// ferry's own failures (cannot connect, agent error): distinct from any remote exit code a
// program normally uses.
inline constexpr int kFerryFailure = 255;
// Unknown run id, bad arguments.
inline constexpr int kUsageFailure = 2;

struct RunExit {
  std::string id;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string ended_at;
  std::uint64_t log_bytes = 0;
  bool lost = false;  // no exit status will come: the box rebooted or the supervisor was killed
};

// run/exited params (or the same fields of a run/list entry).
std::expected<RunExit, std::string> parse_run_exit(const json& params);

// exitCode N -> N; signal N -> 128+N; neither -> kFerryFailure.
int exit_status(const RunExit& exit);

// "INT", "SIGINT", "int" or "2" -> 2. Only signals that make sense to send to a run.
std::expected<int, std::string> signal_number(std::string_view name);
// 2 -> "INT"; unknown numbers as digits.
std::string signal_name(int number);

// "exit 3", "signal KILL (9)".
std::string describe(const RunExit& exit);

}  // namespace ferry::run

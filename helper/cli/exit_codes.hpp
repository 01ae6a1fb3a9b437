// ferry's exit statuses: the one table every command returns from (`ferry --help` lists it).
// Commands that run a program on the box (run, train, debug, logs) pass its status through
// instead (the remote code, 128+N for signal N) and use kFerryFailure for ferry's own failures,
// so they never look like the program's.
#pragma once

#include "helper/run/run_exit.hpp"
#include "protocol/error.hpp"

namespace ferry::cli::exit_status {

inline constexpr int kOk = 0;
inline constexpr int kFailed = 1;        // the command failed; stderr says why and how to fix it
inline constexpr int kUsage = run::kUsageFailure;  // 2: bad arguments, no or a bad ferry.json, an unknown run id
inline constexpr int kAttention = 3;     // done, but something needs you: sync conflicts or held deletes, debugpy missing
inline constexpr int kInterrupted = 130; // Ctrl-C (128 + SIGINT)
inline constexpr int kReaderGone = 141;  // stdout's reader went away: 128 + SIGPIPE, as a shell says
inline constexpr int kTerminated = 143;  // run, logs, attach told to stop following (SIGTERM, SIGHUP, a closed console): 128 + SIGTERM
inline constexpr int kFerryFailure = run::kFerryFailure;  // 255: run, train, debug, logs when ferry itself failed

// A failed command's status from its error's kind: 2 when the fix is in the arguments or
// ferry.json, 130 when cancelled (Ctrl-C while waiting), 3 for a missing debugpy, else 1 (the
// table gives a lost agent and an I/O failure no status of their own: stderr says which).
inline constexpr int exit_status_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_input:
    case ErrorKind::project_not_found:
    case ErrorKind::invalid_project: return kUsage;
    case ErrorKind::cancelled: return kInterrupted;
    case ErrorKind::debugpy_missing: return kAttention;
    default: return kFailed;
  }
}

// The table as `ferry --help` prints it.
inline constexpr const char* kHelpText =
    "Exit status: 0 ok; 1 failed; 2 bad arguments or ferry.json; 3 done, but conflicts, held deletes or a\n"
    "missing debugpy need you; 130 interrupted. run, train, debug and logs return the program's own status\n"
    "(128+N for signal N) and 255 when ferry itself failed.";

}  // namespace ferry::cli::exit_status

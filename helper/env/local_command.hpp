// A program run on this machine from an argument vector, never through a shell (host "local"'s
// env probe, the project venv): words from ferry.json or the command line stay words.
#pragma once

#include <chrono>
#include <expected>
#include <string>
#include <vector>

namespace ferry::env {

struct LocalOutput {
  std::string out, err;  // err: its first 64 KiB
  int exit_status = 0;   // 128 + the signal when killed
};

// argv[0] is looked up on PATH as execvp does; stdin is the null device; `cwd` (UTF-8, "" = ours)
// is entered first. Started by the launcher (common/process.hpp) on POSIX and Windows alike. The
// error says why no exit status came back: the program could not be started (not found, not
// executable), or it ran past `timeout` (it is killed, with its process group or job).
std::expected<LocalOutput, std::string> run_local_command(const std::vector<std::string>& argv, const std::string& cwd,
                                                         std::chrono::milliseconds timeout);

}  // namespace ferry::env

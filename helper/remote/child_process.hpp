// A child process with its stdin/stdout on pipes (the local agent, the OpenSSH client), started by
// the launcher (common/process.hpp: Boost.Process, in a process group of its own) and reaped
// exactly once, however many threads ask for its exit status.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "common/process.hpp"

namespace ferry::remote {

class ChildProcess {
 public:
  // argv[0] is the executable path (no PATH search). stderr is inherited, so the child's logs
  // join ours; the child leads a process group of its own (a terminal's Ctrl-C reaches only us).
  // The returned ends are not inherited by other children and are owned by the caller: on POSIX
  // fds (close(2) them), on Windows pipe HANDLEs (CloseHandle).
  struct Spawned {
    platform::NativePipe stdin_fd = platform::kNoPipe;   // write end
    platform::NativePipe stdout_fd = platform::kNoPipe;  // read end
  };
  std::expected<Spawned, std::string> spawn(const std::vector<std::string>& argv);

  ChildProcess() = default;
  ~ChildProcess() = default;  // the launcher kills and reaps a child still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return static_cast<pid_t>(process_.id()); }
  // The exit status once the child has exited, waiting at most `timeout`: the wait(2) status on
  // POSIX, the exit code on Windows (describe_status reads either).
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  bool reaped() { return process_.reaped(); }
  // `signal` to the child alone (on Windows, which has no signals, it is terminated).
  void kill(int signal) { process_.signal(signal); }

  // "exited with status 3", "killed by signal 9 (Killed)".
  static std::string describe_status(int status) { return platform::ExitStatus{status}.describe(); }

 private:
  platform::Process process_;
};

}  // namespace ferry::remote

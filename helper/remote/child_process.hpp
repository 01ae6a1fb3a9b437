// A child process with its stdin/stdout on pipes, started with posix_spawn (safe in a threaded
// helper) and reaped exactly once, however many threads ask for its exit status.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <expected>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ferry::remote {

class ChildProcess {
 public:
  // argv[0] is the executable path (no PATH search). stderr is inherited, so the child's logs
  // join ours; the child leads a process group of its own (a terminal's Ctrl-C reaches only us).
  // The returned fds are close-on-exec and owned by the caller.
  struct Spawned {
    int stdin_fd = -1;   // write end
    int stdout_fd = -1;  // read end
  };
  std::expected<Spawned, std::string> spawn(const std::vector<std::string>& argv);

  ChildProcess() = default;
  ~ChildProcess();  // kills and reaps a child still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The wait(2) status once the child has exited, waiting at most `timeout`.
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  bool reaped();
  void kill(int signal);

  // "exited with status 3", "killed by signal 9 (Killed)".
  static std::string describe_status(int status);

 private:
  pid_t pid_ = -1;
  int pidfd_ = -1;  // readable once the child exits (Linux >= 5.3); else we poll waitpid
  std::mutex mutex_;
  std::optional<int> status_;
};

}  // namespace ferry::remote

// Spawning and reaping the agent subprocess: see child_process.hpp.
#include "helper/remote/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "common/spawn.hpp"


namespace ferry::remote {

std::expected<ChildProcess::Spawned, std::string> ChildProcess::spawn(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::unexpected("no program to start");
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return std::unexpected(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    int e = errno;
    ::close(in[0]);
    ::close(in[1]);
    return std::unexpected(std::string("pipe: ") + std::strerror(e));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on the target, so only fds 0 and 1 (and inherited stderr) survive.
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  // A process group of its own (spawn_in_own_group): the terminal's Ctrl-C is for ferry, which
  // decides what it means (stop a sync after the requests in flight, escalate to a run); it must
  // not kill the agent, which stands for the remote box. The agent still ends when we do (EOF on
  // its stdin). Our SIGPIPE is ignored (dead agents give EPIPE); the child gets the default back.
  int rc = 0;
  const pid_t pid = posix::spawn_in_own_group(argv, &actions, false, rc);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    return std::unexpected("cannot start '" + argv[0] + "': " + std::strerror(rc));
  }
  pid_ = pid;
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  return Spawned{in[1], out[0]};
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped()) {
    kill(SIGKILL);
    wait_for(std::chrono::hours(1));
  }
  if (pidfd_ >= 0) ::close(pidfd_);
}

std::optional<int> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    {
      // waitpid and kill share this lock, so kill() never signals a pid that was just reaped.
      std::lock_guard lock(mutex_);
      if (status_ || pid_ <= 0) return status_;
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        status_ = status;
        return status_;
      }
      if (r < 0 && errno != EINTR) return std::nullopt;  // not our child any more: nothing to reap
    }
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return std::nullopt;
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    } else {
      // Kernels without pidfd: a short back-off bounded by the caller's timeout.
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<long long>(left, 5)));
    }
  }
}

bool ChildProcess::reaped() {
  std::lock_guard lock(mutex_);
  return status_.has_value();
}

void ChildProcess::kill(int signal) {
  std::lock_guard lock(mutex_);
  // Once reaped the pid may belong to someone else: never signal it.
  if (pid_ > 0 && !status_) ::kill(pid_, signal);
}

std::string ChildProcess::describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "stopped with wait status " + std::to_string(status);
}

}  // namespace ferry::remote

// Running a program from its argv on this machine: see local_command.hpp.
#include "helper/env/local_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/spawn.hpp"
#include "common/unique_fd.hpp"


namespace ferry::env {

namespace {

using posix::UniqueFd;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kErrKept = 64 * 1024;

std::string errno_text(const std::string& what, int e) { return what + ": " + std::strerror(e); }

// Reads both pipes to their ends (a child blocked on a full stderr pipe would never finish its
// stdout), or until the deadline: false then.
bool drain(UniqueFd& out_fd, UniqueFd& err_fd, LocalOutput& o, Clock::time_point deadline) {
  char buf[16384];
  while (out_fd || err_fd) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p[2] = {{out_fd.get(), POLLIN, 0}, {err_fd.get(), POLLIN, 0}};
    const int n = ::poll(p, 2, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (n < 0 && errno != EINTR) return false;
    for (int k = 0; k < 2 && n > 0; ++k) {
      if (!p[k].revents) continue;
      UniqueFd& fd = k == 0 ? out_fd : err_fd;
      const ssize_t got = ::read(fd.get(), buf, sizeof buf);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        fd.reset();
        continue;
      }
      if (k == 0) o.out.append(buf, static_cast<std::size_t>(got));
      else if (o.err.size() < kErrKept) o.err.append(buf, std::min(static_cast<std::size_t>(got), kErrKept - o.err.size()));
    }
  }
  return true;
}

int wait_status(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

std::expected<LocalOutput, std::string> run_local_command(const std::vector<std::string>& argv, const std::string& cwd,
                                                         std::chrono::milliseconds timeout) {
  if (argv.empty() || argv.front().empty()) return std::unexpected(std::string("no program to run"));
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return std::unexpected(errno_text("pipe", errno));
  UniqueFd out_read(out_pipe[0]), out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return std::unexpected(errno_text("pipe", errno));
  UniqueFd err_read(err_pipe[0]), err_write(err_pipe[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_write.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), STDERR_FILENO);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  // Its own process group, so a timeout ends whatever it started too (spawn_in_own_group).
  int rc = 0;
  const pid_t pid = posix::spawn_in_own_group(argv, &actions, true, rc);
  posix_spawn_file_actions_destroy(&actions);
  out_write.reset();
  err_write.reset();
  if (rc != 0) return std::unexpected(errno_text("cannot run '" + argv.front() + "'", rc));

  LocalOutput o;
  const bool done = drain(out_read, err_read, o, Clock::now() + timeout);
  if (!done) ::kill(-pid, SIGKILL);
  o.exit_status = wait_status(pid);
  if (!done)
    return std::unexpected("'" + argv.front() + "' did not finish within " +
                           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) + " s");
  return o;
}

}  // namespace ferry::env

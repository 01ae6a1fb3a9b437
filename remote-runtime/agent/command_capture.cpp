// Running a program and reading its output: see command_capture.hpp.
#include "remote-runtime/agent/command_capture.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "common/unique_fd.hpp"

extern char** environ;

namespace ferry::agent {

using Clock = std::chrono::steady_clock;

namespace {

std::expected<std::string, std::string> capture_in(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                                   char* const* envp) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return std::unexpected(std::string("pipe: ") + std::strerror(errno));
  posix::UniqueFd out_read(out_pipe[0]), out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return std::unexpected(std::string("pipe: ") + std::strerror(errno));
  posix::UniqueFd err_read(err_pipe[0]), err_write(err_pipe[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return std::unexpected("cannot start " + argv[0] + ": " + std::strerror(rc));
  out_write.reset();
  err_write.reset();
  std::string out, err;
  const auto deadline = Clock::now() + timeout;
  bool timed_out = false;
  std::array<pollfd, 2> fds{pollfd{out_read.get(), POLLIN, 0}, pollfd{err_read.get(), POLLIN, 0}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(left)) < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || !fds[i].revents) continue;
      char buf[4096];
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) (i == 0 ? out : err).append(buf, static_cast<std::size_t>(n));
      else if (n == 0 || errno != EINTR) fds[i].fd = -1;
    }
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return std::unexpected(argv[0] + " did not answer within " + std::to_string(timeout.count() / 1000) + " s");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string first = err.substr(0, err.find('\n'));
    if (first.empty()) first = out.substr(0, out.find('\n'));
    return std::unexpected(argv[0] + " failed" + (first.empty() ? std::string() : ": " + first));
  }
  return out;
}

}  // namespace

std::expected<std::string, std::string> capture(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  return capture_in(argv, timeout, environ);
}

std::expected<std::string, std::string> capture(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                                const std::vector<std::string>& env) {
  std::vector<char*> envp;
  for (const auto& kv : env) envp.push_back(const_cast<char*>(kv.c_str()));
  envp.push_back(nullptr);
  return capture_in(argv, timeout, envp.data());
}

}  // namespace ferry::agent

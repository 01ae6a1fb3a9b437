// See detached_agent.hpp.
#include "remote-runtime/agent/run/detached_agent.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "common/posix/private_at.hpp"

namespace ferry::agent::run {

const char* agent_self_path() {
  const char* wrapper = std::getenv("FERRY_AGENT_SELF");
  return wrapper && wrapper[0] == '/' ? wrapper : "/proc/self/exe";
}

bool spawn_detached_agent(const DetachedAgent& d) {
  // Everything the children touch is prepared here: after fork() in a threaded process only
  // async-signal-safe calls are allowed.
  std::vector<char*> argv;
  for (const auto& a : d.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const char* log = d.log.c_str();
  const char* self = agent_self_path();
  pid_t first = ::fork();
  if (first < 0) return false;
  if (first == 0) {
    pid_t second = ::fork();
    if (second != 0) ::_exit(second < 0 ? 1 : 0);
    ::setsid();
    // Not pinning the agent's cwd (it may be unmounted or deleted while this goes on).
    if (::chdir("/") != 0) ::_exit(1);
    if (d.pass_fd >= 0) {
      if (d.pass_fd == d.pass_as) ::fcntl(d.pass_as, F_SETFD, 0);
      else if (::dup2(d.pass_fd, d.pass_as) < 0) ::_exit(1);
    }
    int null_fd = ::open("/dev/null", O_RDWR);
    int log_fd = ferry::posix::open_private_at(AT_FDCWD, log, O_WRONLY | O_APPEND);
    if (null_fd < 0 || log_fd < 0) ::_exit(1);
    ::dup2(d.stdin_fd >= 0 ? d.stdin_fd : null_fd, STDIN_FILENO);
    ::dup2(null_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::close_range(d.pass_fd >= 0 ? static_cast<unsigned>(d.pass_as) + 1 : 3U, ~0U, 0);
    ::execv(self, argv.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(first, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace ferry::agent::run

// The autostop watchdog: see watchdog.hpp.
#include "remote-runtime/agent/autostop/watchdog.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "remote-runtime/agent/run/run_store.hpp"
#include "remote-runtime/train/nvml.hpp"

namespace ferry::agent::autostop {

namespace {

using Clock = std::chrono::steady_clock;

// An flock'ed fd on the lock file, or -1 when another process holds it.
int try_lock(const Paths& p) {
  std::error_code ec;
  fs::create_directories(p.dir(), ec);
  int fd = ::open(p.lock().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// /bin/sh -c `command` from $HOME, output appended to watchdog.log; its exit status (128+signal
// when killed, -1 when it could not start).
int run_shell(const Paths& p, const std::string& command) {
  std::string log = p.log().string();
  const char* home = std::getenv("HOME");
  std::string cwd = home && *home ? home : "/";
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int null_fd = ::open("/dev/null", O_RDONLY);
    int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    if (log_fd >= 0) {
      ::dup2(log_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
    }
    if (::chdir(cwd.c_str()) != 0) [[maybe_unused]] auto r = ::chdir("/");
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

GpuUtil nvml_util() {
  auto nvml = std::make_shared<std::optional<train::Nvml>>(train::Nvml::load());
  return [nvml] {
    std::vector<double> out;
    if (!*nvml) return out;
    for (const auto& g : (*nvml)->sample_all()) out.push_back(g.utilization_percent.value_or(0));
    return out;
  };
}

void write_status(const Paths& p, const Settings& s, const std::optional<std::string>& busy, double idle_for, long checks) {
  json j{{"pid", ::getpid()}, {"checkedAt", run::iso_utc_ms(std::chrono::system_clock::now())}, {"checks", checks},
         {"idleForSeconds", idle_for}, {"idleSeconds", s.idle_seconds}, {"armedAt", s.armed_at}};
  if (busy) j["busy"] = *busy;
  run::write_json_atomic(p.status(), j, 0600);
}

// preStop, a last look, the action. True when it fired (the watchdog then disarms).
bool fire(const Paths& p, const Settings& s, const GpuUtil& gpu_util) {
  record_event(p, "idle", {{"idleSeconds", s.idle_seconds}, {"action", s.action}});
  if (!s.pre_stop.empty()) record_event(p, "preStop", {{"exitCode", run_shell(p, s.pre_stop)}});
  // preStop may take minutes: a run or a helper that arrived meanwhile wins.
  if (auto busy = busy_reason(p, s, gpu_util)) {
    record_event(p, "aborted", {{"busy", *busy}});
    return false;
  }
  auto command = action_command(s);
  json detail{{"action", s.action}};
  if (command) detail["command"] = *command;
  // Disarmed and recorded before the action: "stop" may end this process with the machine.
  remove_settings(p);
  record_event(p, "fired", detail);
  if (command) record_event(p, "actionDone", {{"action", s.action}, {"exitCode", run_shell(p, *command)}});
  return true;
}

}  // namespace

std::chrono::milliseconds poll_interval(double idle_seconds) {
  auto ms = static_cast<long long>(idle_seconds * 100);  // a tenth, in ms
  return std::chrono::milliseconds(std::clamp(ms, 200LL, 10000LL));
}

bool watchdog_running(const Paths& p) {
  int fd = try_lock(p);
  if (fd < 0) return fs::exists(p.lock());
  ::close(fd);
  return false;
}

bool ensure_watchdog(const Paths& p) {
  if (!read_settings(p)) return true;
  std::string dir = fs::absolute(p.state_dir).string();
  std::string log = p.log().string();
  const char* args[] = {"ferry-agent", "--autostop-watch", dir.c_str(), nullptr};
  pid_t first = ::fork();
  if (first < 0) return false;
  if (first == 0) {
    pid_t second = ::fork();
    if (second != 0) ::_exit(second < 0 ? 1 : 0);
    ::setsid();
    if (::chdir("/") != 0) ::_exit(1);
    int null_fd = ::open("/dev/null", O_RDWR);
    int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (null_fd < 0 || log_fd < 0) ::_exit(1);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(null_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    // The agent's stdio is the SSH channel: no copy of it may outlive the agent here.
    ::close_range(3, ~0U, 0);
    ::execv("/proc/self/exe", const_cast<char* const*>(args));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(first, &status, 0) < 0 && errno == EINTR) {
  }
  return true;
}

int watch(const fs::path& state_dir, GpuUtil gpu_util) {
  const Paths p{state_dir};
  int lock = try_lock(p);
  if (lock < 0) return 0;  // another watchdog has it
  if (!gpu_util) gpu_util = nvml_util();
  std::string armed_at;
  auto idle_since = Clock::now();
  long checks = 0;
  while (true) {
    auto s = read_settings(p);
    if (!s) return 0;  // cancelled (or fired by an earlier watchdog)
    if (s->armed_at != armed_at) {  // re-armed: count afresh
      armed_at = s->armed_at;
      idle_since = Clock::now();
    }
    auto busy = busy_reason(p, *s, gpu_util);
    if (busy) idle_since = Clock::now();
    double idle_for = std::chrono::duration<double>(Clock::now() - idle_since).count();
    write_status(p, *s, busy, idle_for, ++checks);
    if (!busy && idle_for >= s->idle_seconds) {
      if (fire(p, *s, gpu_util)) return 0;
      idle_since = Clock::now();
    }
    // A cancel or a re-arm is seen within 0.2 s, whatever the poll interval.
    const auto next = Clock::now() + poll_interval(s->idle_seconds);
    while (Clock::now() < next) {
      std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(200), next - Clock::now()));
      auto now_set = read_settings(p);
      if (!now_set || now_set->armed_at != armed_at) break;
    }
  }
}

}  // namespace ferry::agent::autostop

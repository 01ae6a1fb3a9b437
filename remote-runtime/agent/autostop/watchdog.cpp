// The autostop watchdog: see watchdog.hpp.
#include "remote-runtime/agent/autostop/watchdog.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>
#include <vector>

#include "common/posix/private_at.hpp"
#include "common/private_files.hpp"
#include "remote-runtime/agent/gpu_query.hpp"
#include "remote-runtime/agent/run/detached_agent.hpp"
#include "remote-runtime/agent/run/run_store.hpp"
#include "protocol/json_parse.hpp"

namespace ferry::agent::autostop {

namespace {

using Clock = std::chrono::steady_clock;

// An flock'ed fd on the lock file, or -1 when another process holds it (`wait`: once it let go).
int try_lock(const Paths& p, bool wait = false) {
  ferry::posix::make_private_dirs(p.dir());
  int fd = ferry::posix::open_private(p.lock(), O_RDWR);
  if (fd < 0) return -1;
  int rc = 0;
  while ((rc = ::flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The webhook the agent wrote into our stdin pipe; stdin is /dev/null afterwards (so preStop
// and the action cannot read it either).
std::optional<Webhook> read_webhook_from_stdin() {
  std::string text;
  char buf[4096];
  while (true) {
    auto n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  if (int null_fd = ::open("/dev/null", O_RDONLY); null_fd >= 0) {
    ::dup2(null_fd, STDIN_FILENO);
    ::close(null_fd);
  }
  auto j = protocol::parse_json_text(text).value_or(json(json::value_t::discarded));
  auto hook = webhook_from_json(j);
  if (!hook) return std::nullopt;
  return *hook;
}

// The notice, before the action ("stop" may end this process with the machine).
void notify(const Paths& p, const Settings& s, const std::optional<Webhook>& hook) {
  if (hook) {
    record_event(p, "webhook", send_webhook(*hook, autostop_notice(s.idle_seconds, s.action, s.armed_at)));
  } else if (!s.webhook_to.empty()) {
    record_event(p, "webhook", {{"sent", false}, {"to", s.webhook_to},
                                {"reason", "this watchdog was restarted (agent or box restart) and does not hold the URL, which "
                                           "is never stored on the host: re-arm with `ferry autostop` to have it sent"}});
  }
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
    int log_fd = ferry::posix::open_private_at(AT_FDCWD, log.c_str(), O_WRONLY | O_APPEND);
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

GpuUtil smi_util() {
  return [smi = default_nvidia_smi()] { return gpu_utilizations(smi); };
}

void write_status(const Paths& p, const Settings& s, const std::optional<std::string>& busy, double idle_for, long checks) {
  json j{{"pid", ::getpid()}, {"checkedAt", run::iso_utc_ms(std::chrono::system_clock::now())}, {"checks", checks},
         {"idleForSeconds", idle_for}, {"idleSeconds", s.idle_seconds}, {"armedAt", s.armed_at}};
  if (busy) j["busy"] = *busy;
  run::write_json_atomic(p.status(), j, 0600);
}

// preStop, a last look, the action. True when it fired (the watchdog then disarms).
bool fire(const Paths& p, const Settings& s, const GpuUtil& gpu_util, const std::optional<Webhook>& hook) {
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
  notify(p, s, hook);
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

WatchOptions parse_watch_options(std::span<char* const> args) {
  WatchOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (a == "--id" && i + 1 < args.size()) o.id = args[++i];
    else if (a == "--take-over") o.take_over = true;
    else if (a == "--webhook-stdin") o.webhook_stdin = true;
  }
  return o;
}

bool ensure_watchdog(const Paths& p, const std::optional<Webhook>& hook, bool take_over) {
  auto settings = read_settings(p);
  if (!settings) return true;
  std::string dir = fs::absolute(p.state_dir).string();
  std::string log = p.log().string();
  std::vector<std::string> argv{"ferry-agent", "--autostop-watch", dir};
  if (!settings->watchdog_id.empty()) argv.insert(argv.end(), {"--id", settings->watchdog_id});
  if (take_over) argv.push_back("--take-over");
  if (hook) argv.push_back("--webhook-stdin");
  // The URL goes into a pipe now (far below its 64 KiB buffer) and is read by the watchdog.
  int hook_pipe[2] = {-1, -1};
  if (hook) {
    if (::pipe2(hook_pipe, O_CLOEXEC) != 0) return false;
    const std::string text = webhook_to_json(*hook).dump();
    const bool written = ::write(hook_pipe[1], text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(hook_pipe[1]);
    if (!written) {
      ::close(hook_pipe[0]);
      return false;
    }
  }
  const bool started = run::spawn_detached_agent({std::move(argv), log, hook_pipe[0]});
  if (hook) ::close(hook_pipe[0]);
  return started;
}

int watch(const fs::path& state_dir, const WatchOptions& options, GpuUtil gpu_util) {
  const Paths p{state_dir};
  std::optional<Webhook> hook;
  if (options.webhook_stdin) hook = read_webhook_from_stdin();
  int lock = try_lock(p, options.take_over);
  if (lock < 0) return 0;  // another watchdog has it
  if (!gpu_util) gpu_util = smi_util();
  std::string armed_at;
  auto idle_since = Clock::now();
  long checks = 0;
  while (true) {
    auto s = read_settings(p);
    if (!s) return 0;  // cancelled (or fired by an earlier watchdog)
    // Re-armed with a newer watchdog: it waits for our lock and holds that arm's webhook.
    if (!options.id.empty() && !s->watchdog_id.empty() && s->watchdog_id != options.id) return 0;
    if (s->armed_at != armed_at) {  // re-armed: count afresh
      armed_at = s->armed_at;
      idle_since = Clock::now();
    }
    auto busy = busy_reason(p, *s, gpu_util);
    if (busy) idle_since = Clock::now();
    double idle_for = std::chrono::duration<double>(Clock::now() - idle_since).count();
    write_status(p, *s, busy, idle_for, ++checks);
    if (!busy && idle_for >= s->idle_seconds) {
      if (fire(p, *s, gpu_util, hook)) return 0;
      idle_since = Clock::now();
    }
    // A cancel or a re-arm is seen within 0.2 s, whatever the poll interval.
    const auto next = Clock::now() + poll_interval(s->idle_seconds);
    while (Clock::now() < next) {
      std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(200), next - Clock::now()));
      auto now_set = read_settings(p);
      if (!now_set || now_set->armed_at != armed_at || now_set->watchdog_id != s->watchdog_id) break;
    }
  }
}

}  // namespace ferry::agent::autostop

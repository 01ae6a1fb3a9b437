// Run supervisor and its launch from the agent: see supervisor.hpp.
#include "remote-runtime/agent/run/supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <thread>
#include <vector>

#include "common/full_io.hpp"
#include "common/private_files.hpp"
#include "remote-runtime/agent/run/detached_agent.hpp"
#include "remote-runtime/agent/run/output_log.hpp"
#include "protocol/json_parse.hpp"

namespace ferry::agent::run {
namespace {

using Clock = std::chrono::steady_clock;

// Output still arriving after the command exited comes from processes it left behind holding
// the pipes (or the pty); the run ends this long after the exit at the latest.
constexpr std::chrono::milliseconds kDrainAfterExit{2000};
// How long what a run left behind in its group gets between SIGTERM and SIGKILL.
constexpr std::chrono::milliseconds kLeftoverGrace{2000};

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void report(const json& j) {
  const std::string line = j.dump() + "\n";
  (void)ferry::posix::write_full(kReportFd, line.data(), line.size());
  ::close(kReportFd);
}

// What the child tells the supervisor through a CLOEXEC pipe when chdir or exec fails.
struct ChildFailure {
  int stage;  // 1 = chdir, 2 = exec
  int error;
};

// What the command left in its process group when it exited (a debug adapter still holding its
// port, data-loader workers still holding GPU memory) ends with it, as torchrun and systemd end a
// job's workers: SIGTERM, then SIGKILL after a grace. A process meant to outlive the run starts a
// session of its own (setsid). Group members can be zombies that no init reaps here, so the wait
// is bounded rather than "until the group is empty".
void end_leftovers(pid_t pgid) {
  if (::kill(-pgid, 0) != 0) return;
  ::kill(-pgid, SIGTERM);
  for (const auto deadline = Clock::now() + kLeftoverGrace; Clock::now() < deadline;) {
    if (::kill(-pgid, 0) != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pgid, SIGKILL);
}

struct Spec {
  std::vector<std::string> argv;
  std::string program;
  std::string cwd;
  std::vector<std::string> env;
  bool tty = false;
  unsigned short cols = 80;
  unsigned short rows = 24;
};

std::expected<Spec, std::string> parse_spec(const json& j) {
  try {
    Spec s;
    s.argv = j.at("argv").get<std::vector<std::string>>();
    s.program = j.at("program").get<std::string>();
    s.cwd = j.at("cwdAbsolute").get<std::string>();
    s.env = j.at("envList").get<std::vector<std::string>>();
    s.tty = j.value("tty", false);
    s.cols = j.value("cols", static_cast<unsigned short>(80));
    s.rows = j.value("rows", static_cast<unsigned short>(24));
    if (s.argv.empty()) return std::unexpected("spec.json: empty argv");
    return s;
  } catch (const json::exception& e) {
    return std::unexpected(std::string("spec.json: ") + e.what());
  }
}

// The supervisor's poll loop state: the command's output fds, the stdin relay, the control FIFO.
class Relay {
 public:
  int out = -1, err = -1, in = -1;  // with a tty: out == in == the pty master, err unused
  int fifo = -1, control = -1, sigfd = -1, log = -1;
  bool tty = false;
  pid_t child = -1;

  int run() {
    std::string pending;  // stdin bytes read from the FIFO, not yet taken by the command
    std::string control_buf;
    bool eof_requested = false;
    bool exited = false;
    int status = 0;
    Clock::time_point drain_deadline{};
    std::vector<char> buf(kMaxRecordData);
    while (true) {
      if (exited && out < 0 && err < 0) break;
      int timeout = -1;
      if (exited) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(drain_deadline - Clock::now()).count();
        if (left <= 0) break;
        timeout = static_cast<int>(left);
      }
      std::vector<pollfd> fds;
      auto watch = [&](int fd, short events) {
        if (fd >= 0) fds.push_back(pollfd{fd, events, 0});
      };
      watch(out, POLLIN);
      watch(err, POLLIN);
      if (!exited) watch(sigfd, POLLIN);
      watch(control, POLLIN);
      // With the command's stdin gone the FIFO is still drained (and dropped), so run/input
      // never waits on a reader that will not come.
      if (pending.empty()) watch(fifo, POLLIN);
      if (in >= 0 && !pending.empty()) watch(in, POLLOUT);
      int n = ::poll(fds.data(), fds.size(), timeout);
      if (n < 0) {
        if (errno == EINTR) continue;
        std::cerr << errno_text("poll") << "\n";
        break;
      }
      if (n == 0) continue;
      for (const auto& p : fds) {
        if (p.revents == 0) continue;
        if (p.fd == out && (p.revents & POLLIN || p.revents & (POLLHUP | POLLERR))) {
          read_output(out, kStdout, buf);
        } else if (p.fd == err && (p.revents & POLLIN || p.revents & (POLLHUP | POLLERR))) {
          read_output(err, kStderr, buf);
        } else if (p.fd == sigfd) {
          signalfd_siginfo info{};
          while (::read(sigfd, &info, sizeof info) > 0) {
          }
          if (::waitpid(child, &status, WNOHANG) == child) {
            exited = true;
            drain_deadline = Clock::now() + kDrainAfterExit;
          }
        } else if (p.fd == control) {
          ssize_t r = ::read(control, buf.data(), buf.size());
          if (r > 0) control_buf.append(buf.data(), static_cast<std::size_t>(r));
          for (auto nl = control_buf.find('\n'); nl != std::string::npos; nl = control_buf.find('\n')) {
            std::string line = control_buf.substr(0, nl);
            control_buf.erase(0, nl + 1);
            if (line == "eof") {
              eof_requested = true;
            } else if (line.starts_with("resize ") && tty) {
              unsigned cols = 0, rows = 0;
              if (std::sscanf(line.c_str(), "resize %u %u", &cols, &rows) == 2) {
                winsize ws{static_cast<unsigned short>(rows), static_cast<unsigned short>(cols), 0, 0};
                ::ioctl(out, TIOCSWINSZ, &ws);
              }
            }
          }
        } else if (p.fd == fifo && pending.empty()) {
          ssize_t r = ::read(fifo, buf.data(), buf.size());
          if (r > 0 && in >= 0) pending.assign(buf.data(), static_cast<std::size_t>(r));
        } else if (p.fd == in && !pending.empty()) {
          write_pending(pending);
        }
      }
      // The agent writes input before it asks for eof, so the FIFO is drained before closing.
      if (eof_requested && in >= 0 && pending.empty()) {
        ssize_t r = ::read(fifo, buf.data(), buf.size());
        if (r > 0) {
          pending.assign(buf.data(), static_cast<std::size_t>(r));
        } else {
          eof_requested = false;
          close_stdin();
        }
      }
    }
    if (!exited) ::waitpid(child, &status, 0);
    return status;
  }

 private:
  void read_output(int& fd, std::uint8_t stream, std::vector<char>& buf) {
    while (fd >= 0) {
      ssize_t r = ::read(fd, buf.data(), buf.size());
      if (r > 0) {
        if (!append_record(log, stream, std::string_view(buf.data(), static_cast<std::size_t>(r))))
          std::cerr << errno_text("append to output.log") << "\n";
        return;  // one record per wake-up keeps both streams moving in the order they come
      }
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && errno == EAGAIN) return;
      // EOF on a pipe, EIO on a pty master once every slave fd is closed.
      bool shared = fd == in;
      close_fd(fd);
      if (shared) in = -1;
      return;
    }
  }

  void write_pending(std::string& pending) {
    ssize_t w = ::write(in, pending.data(), pending.size());
    if (w > 0) {
      pending.erase(0, static_cast<std::size_t>(w));
    } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
      pending.clear();  // the command closed its stdin: nobody will read the rest
      if (!tty) close_fd(in);
    }
  }

  void close_stdin() {
    if (tty) {
      // A terminal has no half-close; ^D at the start of a line is its end of input.
      const char eot = 0x04;
      [[maybe_unused]] auto r = ::write(in, &eot, 1);
    } else {
      close_fd(in);
    }
  }
};

// The FIFOs, output.log and the SIGCHLD signalfd the relay polls.
std::expected<void, std::string> open_run_files(const RunFiles& run, Relay& relay) {
  if (::mkfifo(run.stdin_fifo().c_str(), 0600) != 0 || ::mkfifo(run.control_fifo().c_str(), 0600) != 0)
    return std::unexpected(errno_text("mkfifo in " + run.dir.string()));
  // O_RDWR: the supervisor is a writer too, so agents opening and closing the FIFO never
  // make it see EOF.
  relay.fifo = ::open(run.stdin_fifo().c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  relay.control = ::open(run.control_fifo().c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  relay.log = ferry::posix::open_private(run.output(), O_WRONLY | O_APPEND);
  if (relay.fifo < 0 || relay.control < 0 || relay.log < 0)
    return std::unexpected(errno_text("open the run's files in " + run.dir.string()));
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  relay.sigfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  return {};
}

// The command's ends of its stdio: a pty slave, or three pipe ends.
struct ChildStdio {
  int in = -1, out = -1, err = -1, slave = -1;
  void close_all() {
    close_fd(slave);
    close_fd(in);
    close_fd(out);
    close_fd(err);
  }
};

// Makes the command's stdio and gives the relay its ends (non-blocking).
std::expected<ChildStdio, std::string> make_stdio(const Spec& spec, Relay& relay) {
  ChildStdio child;
  if (spec.tty) {
    winsize ws{spec.rows, spec.cols, 0, 0};
    int master = -1;
    if (::openpty(&master, &child.slave, nullptr, nullptr, &ws) != 0) return std::unexpected(errno_text("openpty"));
    ::fcntl(master, F_SETFD, FD_CLOEXEC);
    ::fcntl(child.slave, F_SETFD, FD_CLOEXEC);
    set_nonblocking(master);
    relay.out = relay.in = master;
    return child;
  }
  int in_p[2], out_p[2], err_p[2];
  if (::pipe2(in_p, O_CLOEXEC) != 0 || ::pipe2(out_p, O_CLOEXEC) != 0 || ::pipe2(err_p, O_CLOEXEC) != 0)
    return std::unexpected(errno_text("pipe"));
  child.in = in_p[0];
  relay.in = in_p[1];
  relay.out = out_p[0];
  child.out = out_p[1];
  relay.err = err_p[0];
  child.err = err_p[1];
  set_nonblocking(relay.in);
  set_nonblocking(relay.out);
  set_nonblocking(relay.err);
  return child;
}

// In the forked child: default signals, its own process group (a session on the pty with a
// tty), stdio, cwd, exec. A failed chdir or exec is written to `fail_fd` for the supervisor.
[[noreturn]] void exec_command(const Spec& spec, const ChildStdio& stdio, char* const* argv, char* const* envp, int fail_fd) {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGHUP, SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGCHLD}) ::signal(sig, SIG_DFL);
  if (spec.tty) {
    ::setsid();  // a new session is also a new group with pgid == pid
    ::ioctl(stdio.slave, TIOCSCTTY, 0);
    ::dup2(stdio.slave, STDIN_FILENO);
    ::dup2(stdio.slave, STDOUT_FILENO);
    ::dup2(stdio.slave, STDERR_FILENO);
  } else {
    ::setpgid(0, 0);
    ::dup2(stdio.in, STDIN_FILENO);
    ::dup2(stdio.out, STDOUT_FILENO);
    ::dup2(stdio.err, STDERR_FILENO);
  }
  ChildFailure failure{1, 0};
  if (::chdir(spec.cwd.c_str()) == 0) {
    ::execve(spec.program.c_str(), argv, envp);
    failure.stage = 2;
  }
  failure.error = errno;
  [[maybe_unused]] auto w = ::write(fail_fd, &failure, sizeof failure);
  ::_exit(127);
}

// Forks the command as a process-group leader and waits until it has exec'd (or failed to).
std::expected<pid_t, std::string> start_command(Spec& spec, ChildStdio& stdio) {
  int fail_pipe[2];
  if (::pipe2(fail_pipe, O_CLOEXEC) != 0) return std::unexpected(errno_text("pipe"));
  std::vector<char*> argv;
  for (auto& a : spec.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : spec.env) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) return std::unexpected(errno_text("fork"));
  if (pid == 0) exec_command(spec, stdio, argv.data(), envp.data(), fail_pipe[1]);
  if (!spec.tty) ::setpgid(pid, pid);  // both sides set it, so no signal can race the child's call
  stdio.close_all();
  ::close(fail_pipe[1]);
  ChildFailure failure{0, 0};
  ssize_t got;
  while ((got = ::read(fail_pipe[0], &failure, sizeof failure)) < 0 && errno == EINTR) {
  }
  ::close(fail_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof failure)) {
    ::waitpid(pid, nullptr, 0);
    std::string what = failure.stage == 1 ? "cannot enter " + spec.cwd : "cannot execute " + spec.program;
    return std::unexpected(what + ": " + std::strerror(failure.error));
  }
  return pid;
}

// meta.json: what run/list shows (env keys only, never values).
json run_meta(const RunFiles& run, const Spec& spec, const json& spec_json, pid_t pid) {
  json meta{{"id", run.id},
            // A Slurm run's process is the follower: the list shows the program it submitted.
            {"argv", spec_json.contains("displayArgv") ? spec_json["displayArgv"] : json(spec.argv)},
            {"cwd", spec_json.value("cwd", ".")},
            {"root", spec_json.value("root", "")},
            {"env", spec_json.value("envKeys", json::array())},
            {"tty", spec.tty},
            {"pid", static_cast<long long>(pid)},
            {"pgid", static_cast<long long>(pid)},
            {"startedAt", spec_json.value("startedAt", "")},
            {"supervisorPid", static_cast<long long>(::getpid())}};
  // Runs that belong together (the ranks of one `ferry train --hosts`) say so in their environment;
  // run/list shows it, so `ferry runs` can group them.
  for (const auto& var : spec.env) {
    if (var.starts_with("FERRY_RUN_GROUP=")) meta["group"] = var.substr(16);
    if (var.starts_with("FERRY_RUN_LABEL=")) meta["label"] = var.substr(16);
  }
  if (spec.tty) {
    meta["cols"] = spec.cols;
    meta["rows"] = spec.rows;
  }
  return meta;
}

// exit.json (temp + rename), seen by the followers at once and put on disk right after, with the
// log (both reach the disk before the supervisor exits); false when it could not be written.
bool record_exit(const RunFiles& run, int log, int status) {
  struct stat st {};
  ::fstat(log, &st);
  json exit_json{{"endedAt", iso_utc_ms(std::chrono::system_clock::now())},
                 {"logBytes", static_cast<long long>(st.st_size)}};
  if (WIFSIGNALED(status)) exit_json["signal"] = WTERMSIG(status);
  else exit_json["exitCode"] = WEXITSTATUS(status);
  const bool recorded = write_json_atomic(run.exit(), exit_json, 0600, Sync::after_rename);
  if (!recorded) std::cerr << errno_text("write " + run.exit().string()) << "\n";
  ::fsync(log);
  return recorded;
}

// The launch failed before the command ran: the agent gets the reason on the report pipe.
int report_failure(const std::string& error) {
  report(json{{"error", error}});
  return 1;
}

}  // namespace

std::expected<LaunchReport, LaunchError> launch_supervisor(const RunFiles& run, std::chrono::milliseconds timeout) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return std::unexpected(LaunchError{errno_text("pipe")});
  const bool started = spawn_detached_agent(
      {{"ferry-agent", "--supervise", run.dir.string()}, run.supervisor_log().string(), -1, pipe_fds[1], kReportFd});
  ::close(pipe_fds[1]);
  if (!started) {
    ::close(pipe_fds[0]);
    return std::unexpected(LaunchError{errno_text("fork")});
  }
  std::string text;
  auto deadline = Clock::now() + timeout;
  char buf[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      ::close(pipe_fds[0]);
      return std::unexpected(LaunchError{
          "the run supervisor did not report within " + std::to_string(timeout.count()) + " ms", false});
    }
    pollfd p{pipe_fds[0], POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    ssize_t r = ::read(pipe_fds[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    text.append(buf, static_cast<std::size_t>(r));
    if (text.find('\n') != std::string::npos) break;  // the report is one line
  }
  ::close(pipe_fds[0]);
  auto j = protocol::parse_json_text(text).value_or(json());
  if (!j.is_object())
    return std::unexpected(LaunchError{"the run supervisor failed to start (see " + run.supervisor_log().string() + ")"});
  if (j.contains("error")) return std::unexpected(LaunchError{j["error"].get<std::string>()});
  return LaunchReport{j.value("pid", 0LL), j.value("pgid", 0LL), j.value("supervisorPid", 0LL)};
}

int supervise(const fs::path& run_dir) {
  ::signal(SIGHUP, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  // The command must not inherit the report pipe: the agent reads it to the end.
  ::fcntl(kReportFd, F_SETFD, FD_CLOEXEC);
  RunFiles run{run_dir.filename().string(), run_dir};
  auto spec_json = read_json_file(run.spec());
  ::unlink(run.spec().c_str());  // env values may be secrets: gone as soon as they are read
  if (!spec_json) return report_failure("cannot read " + run.spec().string());
  auto spec = parse_spec(*spec_json);
  if (!spec) return report_failure(spec.error());

  Relay relay;
  relay.tty = spec->tty;
  if (auto opened = open_run_files(run, relay); !opened) return report_failure(opened.error());
  auto stdio = make_stdio(*spec, relay);
  if (!stdio) return report_failure(stdio.error());
  auto pid = start_command(*spec, *stdio);
  if (!pid) return report_failure(pid.error());
  // meta.json reaches the disk after the agent has its answer: on a cloud disk an fsync can take
  // longer than the whole start, and the agent's listing reads it from the page cache anyway.
  if (!write_json_atomic(run.meta(), run_meta(run, *spec, *spec_json, *pid), 0600, Sync::none)) {
    const std::string error = errno_text("write " + run.meta().string());
    ::kill(-*pid, SIGKILL);
    ::waitpid(*pid, nullptr, 0);
    return report_failure(error);
  }
  report(json{{"pid", *pid}, {"pgid", *pid}, {"supervisorPid", ::getpid()}});
  sync_file(run.meta());

  relay.child = *pid;
  const int status = relay.run();
  const bool recorded = record_exit(run, relay.log, status);
  end_leftovers(*pid);  // after exit.json, so the run's end is reported without this wait
  return recorded ? 0 : 1;
}

}  // namespace ferry::agent::run

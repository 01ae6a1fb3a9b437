// A run that is a Slurm job: see slurm_job.hpp.
#include "remote-runtime/agent/run/slurm_job.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/full_io.hpp"
#include "common/unique_fd.hpp"
#include "remote-runtime/agent/command_capture.hpp"
#include "remote-runtime/agent/run/detached_agent.hpp"
#include "remote-runtime/agent/run/run_store.hpp"

namespace ferry::agent::run {
namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

SlurmRunFiles SlurmRunFiles::in(const fs::path& d) {
  return {d / "slurm.json", d / "job.sbatch", d / "job.out", d / "job.err", d / "slurm-job", d / "slurm-exit", d / "slurm-state"};
}

std::expected<void, std::string> write_slurm_request(const fs::path& run_dir, const protocol::SlurmJobOptions& options,
                                                     const std::vector<std::string>& argv, const fs::path& cwd,
                                                     const std::map<std::string, std::string>& env) {
  json slurm_env = json::array();
  for (const auto& [k, v] : env)
    if (k == "PATH" || k.starts_with("SLURM_")) slurm_env.push_back(k + "=" + v);
  const json request{{"options", protocol::to_json(options)}, {"argv", argv}, {"cwd", cwd.string()}, {"slurmEnv", slurm_env}};
  if (!write_json_atomic(SlurmRunFiles::in(run_dir).request, request, 0600))
    return std::unexpected("cannot write " + SlurmRunFiles::in(run_dir).request.string() + ": " + std::strerror(errno));
  return {};
}

std::string agent_file_path() {
  const std::string self = agent_self_path();
  if (self != "/proc/self/exe") return self;
  std::error_code ec;
  const fs::path target = fs::read_symlink(self, ec);
  return ec ? self : target.string();
}

namespace {

volatile std::sig_atomic_t g_interrupts = 0, g_terminates = 0, g_hangups = 0;
void on_signal(int sig) {
  if (sig == SIGINT) g_interrupts = g_interrupts + 1;
  else if (sig == SIGTERM) g_terminates = g_terminates + 1;
  else g_hangups = g_hangups + 1;
}

void say(const std::string& line) { std::cerr << "ferry: " << line << "\n" << std::flush; }

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// One of the job's output files, relayed to our stdout or stderr from where it was left.
struct Relay {
  fs::path file;
  int fd;
  off_t offset = 0;
  void pump() {
    posix::UniqueFd in(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    if (!in) return;  // not written yet (the job is pending)
    char buf[65536];
    for (;;) {
      const ssize_t n = ::pread(in.get(), buf, sizeof buf, offset);
      if (n <= 0) return;
      if (!posix::write_full(fd, buf, static_cast<std::size_t>(n))) return;
      offset += n;
    }
  }
};

// squeue's view while the job is known to it: state|reason|nodes ("" when it is not).
std::string queue_view(const std::string& id) {
  auto out = capture({"squeue", "-h", "-j", id, "-o", "%T|%r|%N|%L|%P"}, 30s);
  if (!out) return "";
  std::string line = out->substr(0, out->find('\n'));
  return line;
}

struct JobEnd {
  std::string state, exit_code;
};
// The job's end from scontrol (while slurmctld remembers it: MinJobAge), else sacct.
std::optional<JobEnd> job_end(const std::string& id) {
  if (auto out = capture({"scontrol", "show", "job", "-o", id}, 30s)) {
    auto fields = protocol::parse_scontrol_line(*out);
    if (protocol::slurm_state_is_final(fields["JobState"])) return JobEnd{fields["JobState"], fields["ExitCode"]};
    if (!fields["JobState"].empty()) return std::nullopt;
  }
  if (auto out = capture({"sacct", "-n", "-P", "-X", "-j", id, "-o", "State,ExitCode"}, 30s)) {
    const std::string line = out->substr(0, out->find('\n'));
    const auto bar = line.find('|');
    if (bar != std::string::npos && protocol::slurm_state_is_final(line.substr(0, bar)))
      return JobEnd{line.substr(0, line.find(' ')).substr(0, bar), line.substr(bar + 1)};
  }
  return std::nullopt;
}

void scancel(const std::string& id, const char* signal) {
  std::vector<std::string> argv{"scancel"};
  if (signal) argv.insert(argv.end(), {"--full", std::string("--signal=") + signal});
  argv.push_back(id);
  if (auto r = capture(argv, 30s); !r) say(r.error());
  else say(signal ? std::string("SIG") + signal + " sent to job " + id : "job " + id + " cancelled");
}

// The run's signals as Slurm's: INT and the first TERM reach the program; a second TERM or a
// HUP cancels the job.
void forward_signals(const std::string& id, int& seen_int, int& seen_term, int& seen_hup) {
  for (; seen_int < g_interrupts; ++seen_int) scancel(id, "INT");
  for (; seen_term < g_terminates; ++seen_term) scancel(id, seen_term == 0 ? "TERM" : nullptr);
  if (seen_hup < g_hangups) {
    seen_hup = g_hangups;
    scancel(id, nullptr);
  }
}

std::expected<std::string, std::string> submit(const SlurmRunFiles& files, const json& request, const fs::path& run_dir) {
  auto options = protocol::slurm_options_from_json(request.value("options", json::object()));
  if (!options) return std::unexpected(options.error());
  std::vector<std::string> argv = request.value("argv", std::vector<std::string>{});
  {
    std::ofstream script(files.script, std::ios::binary | std::ios::trunc);
    script << protocol::batch_script(agent_file_path(), argv, *options, files.exit.string());
  }
  fs::permissions(files.script, fs::perms::owner_all, fs::perm_options::replace);
  std::vector<std::string> sbatch{"sbatch"};
  for (auto& a : protocol::sbatch_arguments(*options, "ferry-" + run_dir.filename().string(), files.out.string(),
                                            files.err.string(), request.value("cwd", std::string(".")))) sbatch.push_back(a);
  sbatch.push_back(files.script.string());
  auto out = capture(sbatch, 120s);
  if (!out) return std::unexpected(out.error());
  std::string id = out->substr(0, out->find_first_of(";\n"));
  if (id.empty()) return std::unexpected("sbatch printed no job id");
  std::ofstream(files.job_id) << id << "\n";
  return id;
}

// The status the program ended with, as --slurm-step recorded it.
std::optional<int> recorded_exit(const fs::path& file) {
  const std::string text = read_text(file);
  if (text.empty()) return std::nullopt;
  try {
    return std::stoi(text);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

namespace {

// squeue's "%T|%r|%N|%L|%P" line as a state (empty when it is not one); while it pends, how many
// jobs stand before it in its partition's queue (one more squeue).
protocol::SlurmJobState state_of(const std::string& id, const std::string& view) {
  std::vector<std::string> f;
  for (std::size_t at = 0;;) {
    const auto bar = view.find('|', at);
    f.push_back(view.substr(at, bar == std::string::npos ? std::string::npos : bar - at));
    if (bar == std::string::npos) break;
    at = bar + 1;
  }
  f.resize(5);
  protocol::SlurmJobState s{f[0], f[1], f[2], f[3], -1};
  if (s.state == "PENDING")
    if (auto queue = capture(protocol::pending_queue_arguments(f[4]), 30s))
      s.ahead = protocol::jobs_ahead(*queue, id).value_or(-1);
  return s;
}

void record_state(const SlurmRunFiles& files, const protocol::SlurmJobState& state) {
  if (!state.state.empty()) write_json_atomic(files.state, protocol::to_json(state));
}

// Says on stderr where the job stands when that changed (not the time left, which always does):
// "job 12 pending (Priority), 2 jobs ahead", "job 12 running on n1".
void report_state(const std::string& id, const protocol::SlurmJobState& s, std::string& last) {
  const std::string seen = s.state + "|" + s.reason + "|" + s.nodes + "|" + std::to_string(s.ahead);
  if (s.state.empty() || seen == last) return;
  if (s.state == "PENDING" && s.reason == "None") return;  // not yet looked at by the scheduler
  last = seen;
  if (s.state == "PENDING") say(protocol::slurm_pending_line(id, s.reason, s.ahead));
  else if (s.state == "RUNNING") say(protocol::slurm_running_line(id, s.nodes));
  else if (s.state != "COMPLETING" && s.state != "CONFIGURING") say("job " + id + " " + s.state);  // SUSPENDED, REQUEUED ...
}

// Follows the job until it ends: its output relayed, the run's signals forwarded, squeue asked
// every 2 s while it waits and every 10 s while it runs (or at once when the step has recorded
// its status).
JobEnd follow(const SlurmRunFiles& files, const std::string& id, Relay& out, Relay& err) {
  int seen_int = 0, seen_term = 0, seen_hup = 0;
  std::string last_view;
  auto next_poll = Clock::now();
  std::optional<Clock::time_point> step_done_at;
  for (;;) {
    out.pump();
    err.pump();
    forward_signals(id, seen_int, seen_term, seen_hup);
    const bool step_done = fs::exists(files.exit);
    if (step_done && !step_done_at) step_done_at = Clock::now();
    if (step_done || Clock::now() >= next_poll) {
      const std::string view = queue_view(id);
      const auto state = state_of(id, view);
      report_state(id, state, last_view);
      record_state(files, state);
      if (view.empty() || step_done)
        if (auto end = job_end(id)) return *end;
      // The program ended but Slurm will not say how the job did (no scontrol or sacct answer):
      // after a while the recorded status is the answer.
      if (step_done_at && Clock::now() - *step_done_at > 60s) return JobEnd{"", ""};
      next_poll = Clock::now() + (view.starts_with("PENDING") ? 2s : step_done ? 1s : 10s);
    }
    std::this_thread::sleep_for(250ms);  // a signal ends it early (no SA_RESTART)
  }
}

}  // namespace

int follow_slurm_job(const fs::path& run_dir) {
  const auto files = SlurmRunFiles::in(run_dir);
  auto request = read_json_file(files.request);
  if (!request) {
    say("no Slurm request in " + run_dir.string());
    return 1;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART: the wait between polls ends at once
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  auto id = submit(files, *request, run_dir);
  if (!id) {
    say("sbatch: " + id.error());
    return 1;
  }
  say("Slurm job " + *id + " submitted");
  Relay out{files.out, STDOUT_FILENO}, err{files.err, STDERR_FILENO};
  const JobEnd end = follow(files, *id, out, err);
  std::this_thread::sleep_for(200ms);  // the last writes of a file system shared with the node
  out.pump();
  err.pump();
  const auto recorded = recorded_exit(files.exit);
  if (!end.state.empty()) record_state(files, protocol::SlurmJobState{end.state, "", "", "", -1});
  if (end.state.empty()) {  // Slurm did not say (see follow): the program's own status
    say("job " + *id + ": Slurm did not say how it ended; the program exited with " + std::to_string(recorded.value_or(1)));
    return recorded.value_or(1);
  }
  if (end.state != "COMPLETED" || (recorded && *recorded != 0))
    say("job " + *id + " ended " + end.state + " (exit code " + end.exit_code + ")");
  return recorded && (end.state == "COMPLETED" || end.state == "FAILED") ? *recorded
                                                                         : protocol::slurm_exit_status(end.state, end.exit_code);
}

int run_slurm_step(const fs::path& script) {
  auto step = protocol::slurm_step_of(read_text(script));
  if (!step) {
    std::cerr << "ferry-agent --slurm-step: " << script.string() << ": " << step.error() << "\n";
    return 127;
  }
  const pid_t pid = ::fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : step->argv) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::cerr << "ferry: cannot run " << step->argv[0] << ": " << std::strerror(errno) << "\n";
    ::_exit(127);
  }
  // Slurm signals every process of the job: the program takes INT and TERM as it wants, and this
  // parent stays to record how it ended.
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGTERM, SIG_IGN);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (!step->exit_file.empty()) {
    const fs::path tmp = step->exit_file + ".tmp";
    std::ofstream(tmp) << code << "\n";
    std::error_code ec;
    fs::rename(tmp, step->exit_file, ec);
  }
  return code;
}

std::optional<protocol::SlurmJobState> slurm_job_state(const fs::path& run_dir) {
  auto j = read_json_file(SlurmRunFiles::in(run_dir).state);
  return j ? protocol::slurm_job_state_from_json(*j) : std::nullopt;
}

std::string slurm_job_id(const fs::path& run_dir) {
  const std::string text = read_text(SlurmRunFiles::in(run_dir).job_id);
  return text.substr(0, text.find('\n'));
}

void cancel_slurm_job(const fs::path& run_dir) {
  // In the agent serving the link: stderr is its log, not the run's output.
  const std::string trimmed = slurm_job_id(run_dir);
  if (trimmed.empty()) return;
  // With the run's environment, as the follower has it ($SLURM_CONF, $PATH naming Slurm's commands).
  std::vector<std::string> env;
  if (auto request = read_json_file(SlurmRunFiles::in(run_dir).request))
    env = request->value("slurmEnv", std::vector<std::string>{});
  if (auto r = capture({"scancel", trimmed}, 30s, env); !r) spdlog::warn("scancel {}: {}", trimmed, r.error());
}

}  // namespace ferry::agent::run

// `ferry train CONFIG|--launch NAME [--resume] [--detach] [--json]`: sync, run ferry-train CONFIG on the
// project's host as a run (it survives a dropped link), show its events as a progress bar (or
// pass the JSON lines through), pull the plot, CSV and newest checkpoint back, and exit with
// ferry-train's status. Ctrl-C interrupts ferry-train, which checkpoints and exits 130.
#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <iostream>
#include <memory>
#include <mutex>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "helper/cli/commands.hpp"
#include "helper/deploy/launch_target.hpp"
#include "helper/deploy/project_config.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/run/interrupt_escalation.hpp"
#include "helper/run/run_exit.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/train/train_progress.hpp"
#include "helper/train/train_session.hpp"
#include "helper/sync/mapping_target.hpp"
#include "helper/ssh/ssh_config.hpp"
#include "helper/train/train_ranks.hpp"

#include <condition_variable>
#include <deque>
#include <thread>

namespace ferry::cli {
namespace {

namespace fs = std::filesystem;

struct TrainCliOptions {
  std::string launch;  // a ferry.json launch entry of kind "train", instead of CONFIG
  std::string config;
  bool resume = false, detach = false, json = false, no_sync = false;
  std::string trainer;
  std::string hosts;          // --hosts a,b: one training over these hosts
  int nproc_per_host = 1;
  std::string master_addr;    // default: the first host's address as ssh resolves it
  int master_port = 29500;
};

// Ctrl-C while following: the handler only writes to a pipe; the follow loop acts on it.
int g_interrupt_pipe[2] = {-1, -1};
void on_sigint(int) {
  const int saved = errno;
  if (g_interrupt_pipe[1] >= 0) {
    char c = 1;
    [[maybe_unused]] auto n = ::write(g_interrupt_pipe[1], &c, 1);
  }
  errno = saved;
}

std::size_t terminal_width() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) return ws.ws_col - 1;
  return 100;
}

// Writes event lines and the bar. On a terminal the bar is redrawn in place; elsewhere (a pipe,
// a CI log) each step event is one plain line.
class TerminalView {
 public:
  explicit TerminalView(bool json) : json_(json), tty_(::isatty(STDOUT_FILENO) == 1), width_(terminal_width()) {}

  void event(const training::TrainEvent& e, std::string_view line) {
    std::lock_guard lock(mu_);
    if (json_) {
      std::cout << line << "\n" << std::flush;
      return;
    }
    auto lines = progress_.on_event(e);
    clear_bar();
    for (const auto& l : lines) std::cout << l << "\n";
    if (e.kind == "step" || e.kind == "start") {
      if (tty_) {
        std::cout << progress_.bar(width_);
        bar_shown_ = true;
      } else if (e.kind == "step") {
        std::cout << progress_.bar(width_) << "\n";
      }
    }
    std::cout << std::flush;
  }

  void other_stdout(std::string_view line) {
    std::lock_guard lock(mu_);
    clear_bar();
    std::cout << line << "\n";
    redraw();
  }

  void stderr_bytes(std::string_view bytes) {
    std::lock_guard lock(mu_);
    clear_bar();
    std::cerr << bytes << std::flush;
    redraw();
  }

  // The trainer's build on the box (first train on a box, or after a ferry or torch upgrade):
  // a bar redrawn in place on a terminal, a line per stage and per build step elsewhere.
  void build(const training::BuildProgressParser& build) {
    std::lock_guard lock(mu_);
    if (json_) {
      const auto& p = build.progress();
      nlohmann::json j{{"event", "trainer_build"}, {"stage", p.stage}, {"done", p.done}, {"total", p.total},
                       {"elapsed_s", p.elapsed_seconds}, {"message", p.message}};
      if (p.eta_seconds) j["eta_s"] = *p.eta_seconds;
      std::cerr << j.dump() << "\n" << std::flush;
      return;
    }
    if (tty_) {
      std::cerr << "\r\033[K" << build.bar(width_) << (build.progress().stage == "ready" ? "\n" : "") << std::flush;
    } else {
      std::cerr << build.bar(width_) << "\n" << std::flush;
    }
  }

  // A note from ferry itself (stderr), kept apart from the bar.
  void note(const std::string& text) {
    std::lock_guard lock(mu_);
    clear_bar();
    std::cerr << "ferry train: " << text << "\n" << std::flush;
    redraw();
  }

  void finish() {
    std::lock_guard lock(mu_);
    if (bar_shown_) std::cout << "\n" << std::flush;
    bar_shown_ = false;
  }

 private:
  void clear_bar() {
    if (bar_shown_) std::cout << "\r\033[K" << std::flush;
    bar_shown_ = false;
  }
  void redraw() {
    if (tty_ && !json_ && progress_.started()) {
      std::cout << progress_.bar(width_) << std::flush;
      bar_shown_ = true;
    }
  }

  std::mutex mu_;
  bool json_;
  bool tty_;
  std::size_t width_;
  bool bar_shown_ = false;
  training::TrainProgress progress_;
};

// The project and the config file to train: CONFIG (the project is the one around it unless
// --project says otherwise) or --launch NAME (the project from --project or the cwd).
struct TrainInputs {
  deploy::ProjectConfig project;
  fs::path config;
  std::map<std::string, std::string> env;
};

std::expected<TrainInputs, int> train_inputs(const GlobalOptions& g, const TrainCliOptions& o) {
  constexpr const char* who = "ferry train";
  if (o.launch.empty() == o.config.empty()) {
    std::cerr << who << ": give a CONFIG file or --launch NAME (one of the two)\n";
    return std::unexpected(run::kUsageFailure);
  }
  std::error_code ec;
  fs::path config = o.config.empty() ? fs::path() : fs::absolute(o.config, ec);
  // CONFIG: the project around it; --launch: the one around the cwd (--project wins over both).
  auto project = find_cli_project(g, o.launch.empty() ? config.parent_path() : fs::current_path(ec));
  if (!project) {
    std::cerr << who << ": " << project.error() << "\n";
    return std::unexpected(run::kUsageFailure);
  }
  std::map<std::string, std::string> env = project->env;
  if (!o.launch.empty()) {
    auto entry = deploy::find_launch(*project, o.launch);
    auto path = entry ? deploy::train_config_path(*project, **entry) : std::unexpected(entry.error());
    if (!path) {
      std::cerr << who << ": " << path.error() << "\n";
      return std::unexpected(run::kUsageFailure);
    }
    config = *path;
    env = deploy::launch_env(*project, **entry);
  }
  if (!fs::is_regular_file(config, ec)) {
    std::cerr << who << ": no config file " << config.string()
              << " (give the path of a ferry-train config, a JSON file inside the project; samples/train has examples)\n";
    return std::unexpected(run::kUsageFailure);
  }
  return TrainInputs{std::move(*project), std::move(config), std::move(env)};
}

int run_train(const GlobalOptions& g, const TrainCliOptions& o) {
  constexpr const char* who = "ferry train";
  auto inputs = train_inputs(g, o);
  if (!inputs) return inputs.error();
  const fs::path& config = inputs->config;
  const deploy::ProjectConfig& project = inputs->project;
  const bool local = project.host == "local";
  std::atomic<training::TrainSession*> live{nullptr};
  sync::ProjectEndpointOptions eo = cli_endpoint_options(g);
  // A training run outlives link drops: reconnect and re-attach where the stream stopped.
  eo.reconnect = true;
  eo.on_state = [&live](const remote::HostState& s) {
    auto* session = live.load();
    if (s.state == "reconnecting") {
      std::cerr << "ferry train: link to " << s.host << " lost (" << s.message << "); the run goes on, reconnecting\n";
      if (session) session->link_lost();
    } else if (s.state == "connected" && session) {
      session->link_restored();
    }
  };
  auto made = sync::make_project_endpoint(project, eo);
  if (!made) {
    std::cerr << who << ": " << made.error().message << "\n";
    return run::kUsageFailure;
  }
  if (!connect_cli_endpoint(*made, who)) return run::kFerryFailure;
  auto& endpoint = made->endpoint;
  sync::SyncEngine engine(*endpoint, made->target);

  TerminalView view(o.json);
  training::TrainSinks sinks;
  sinks.on_event = [&view](const training::TrainEvent& e, std::string_view line) { view.event(e, line); };
  sinks.on_other_stdout = [&view](std::string_view line) { view.other_stdout(line); };
  sinks.on_stderr = [&view](std::string_view bytes) { view.stderr_bytes(bytes); };
  sinks.on_build = [&view](const training::BuildProgressParser& b) { view.build(b); };
  training::TrainSession session(*endpoint, engine, sinks);
  training::TrainRequest request;
  request.config = config;
  request.resume = o.resume;
  request.sync = !o.no_sync;
  request.binary = o.trainer.empty() ? project.trainer : o.trainer;
  request.interpreter = project.interpreter;
  request.local_host = local;
  request.env = inputs->env;
  auto id = session.start(request);
  if (!id) {
    std::cerr << who << ": " << id.error() << "\n";
    return run::kFerryFailure;
  }
  live = &session;
  if (const auto& s = session.sync_summary()) {
    std::cerr << "synced: " << s->one_line() << "\n";
    for (const auto& c : s->conflicts) std::cerr << "ferry train: sync conflict (not overwritten): " << c.path << "\n";
  }
  if (const auto& t = session.trainer(); t && t->built)
    std::cerr << "built " << t->path << " on " << endpoint->description() << " (" << t->version << ")\n";
  std::string command;
  for (const auto& a : session.launch().argv) command += (command.empty() ? "" : " ") + a;
  std::cerr << fmt::format("run {}: {} (in {} on {})\n", *id, command, session.launch().cwd, endpoint->description());
  if (o.detach) {
    std::cout << *id << "\n";
    std::cerr << "detached; `ferry attach " << *id << "` follows it, `ferry kill " << *id << " --signal INT` stops it with a checkpoint\n";
    live = nullptr;
    return 0;
  }

  if (::pipe2(g_interrupt_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_interrupt_pipe[0] = g_interrupt_pipe[1] = -1;
  struct sigaction sa {}, old {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old);
  run::InterruptEscalation escalation;
  auto followed = session.follow(g_interrupt_pipe[0], [&] {
    char buf[16];
    while (::read(g_interrupt_pipe[0], buf, sizeof buf) > 0) {
    }
    auto step = escalation.next(*id);
    auto sent = session.signal(step.signal);
    if (!sent) {
      view.note("sending SIG" + step.signal + ": " + sent.error());
    } else if (escalation.presses() == 1) {
      const std::string again = o.launch.empty() ? o.config : "--launch " + o.launch;
      view.note("sent SIGINT to ferry-train (run " + *id + "): it writes a checkpoint and exits 130; `ferry train " + again +
                " --resume` continues. Ctrl-C again sends SIGTERM.");
    } else {
      view.note(step.note);
    }
  });
  ::sigaction(SIGINT, &old, nullptr);
  ::close(g_interrupt_pipe[0]);
  ::close(g_interrupt_pipe[1]);
  g_interrupt_pipe[0] = g_interrupt_pipe[1] = -1;
  live = nullptr;
  view.finish();
  if (!followed) {
    std::cerr << who << ": " << followed.error() << "\n";
    return run::kFerryFailure;
  }
  const int status = run::exit_status(*followed);
  if (session.saw_done() || session.last_checkpoint()) {
    auto pulled = session.pull_outputs();
    for (const auto& n : pulled.notes) std::cerr << who << ": " << n << "\n";
    std::ostream& out = o.json ? std::cerr : std::cout;
    for (const auto& f : pulled.files) {
      const std::string name = f.filename().string();
      const char* label = name == "plot.svg" ? "plot" : name == "metrics.csv" ? "metrics" : name == "events.jsonl" ? "events" : "checkpoint";
      out << fmt::format("{:<11}{}\n", label, f.string());
    }
  }
  if (status != 0) std::cerr << who << ": ferry-train " << run::describe(*followed) << "\n";
  return status;
}


// ---- many ranks: --hosts / --nproc-per-host ------------------------------------------------

// One host of a multi-rank training: its link, sync engine and the ranks it runs.
struct HostLink {
  std::string host;
  std::vector<std::size_t> ranks;  // indexes into the rank list; before `made`: its on_state reads them
  deploy::ProjectConfig project;
  sync::ProjectEndpoint made;
  std::unique_ptr<sync::SyncEngine> engine;
};

struct RankRun {
  training::RankSlot slot;
  HostLink* link = nullptr;
  std::unique_ptr<training::TrainSession> session;
  std::string run_id;
  std::thread follower;
};

// What the follower threads report to the supervising loop.
struct RankEvents {
  std::mutex mu;
  std::deque<std::pair<std::size_t, std::expected<run::RunExit, std::string>>> exits;
  int wake[2] = {-1, -1};
  void push(std::size_t i, std::expected<run::RunExit, std::string> e) {
    {
      std::lock_guard lock(mu);
      exits.emplace_back(i, std::move(e));
    }
    char c = 1;
    [[maybe_unused]] auto n = ::write(wake[1], &c, 1);
  }
};

std::string rank_name(const training::RankSlot& s) { return "rank " + std::to_string(s.rank) + " on " + s.host; }

std::expected<training::Rendezvous, std::string> rendezvous_for(const GlobalOptions& g, const deploy::ProjectConfig& project,
                                                                const TrainCliOptions& o, const std::string& first_host) {
  training::Rendezvous rv{o.master_addr, o.master_port};
  if (rv.master_addr.empty() && first_host == "local") rv.master_addr = "127.0.0.1";
  if (rv.master_addr.empty()) {
    std::optional<std::string> config = g.ssh_config ? g.ssh_config : project.ssh_config;
    auto resolved = ssh::resolve_host(first_host, config);
    if (!resolved) return std::unexpected("resolving " + first_host + " for the rendezvous: " + resolved.error().message +
                                          " (or give --master-addr)");
    rv.master_addr = resolved->hostname;
  }
  return rv;
}

// Connects every host (the project with its host replaced), one link each.
std::expected<std::vector<std::unique_ptr<HostLink>>, std::string> open_hosts(const GlobalOptions& g, const deploy::ProjectConfig& project,
                                                                          const std::vector<std::string>& hosts,
                                                                          std::vector<RankRun>& ranks) {
  std::vector<std::unique_ptr<HostLink>> links;
  for (const auto& h : hosts) {
    auto link = std::make_unique<HostLink>();
    link->host = h;
    link->project = project;
    link->project.host = h;
    sync::ProjectEndpointOptions eo = cli_endpoint_options(g);
    eo.reconnect = true;
    HostLink* raw = link.get();
    eo.on_state = [raw, &ranks](const remote::HostState& s) {
      for (auto i : raw->ranks) {
        if (!ranks[i].session) continue;
        if (s.state == "reconnecting") ranks[i].session->link_lost();
        else if (s.state == "connected") ranks[i].session->link_restored();
      }
    };
    auto made = sync::make_project_endpoint(link->project, eo);
    if (!made) return std::unexpected(h + ": " + made.error().message);
    link->made = std::move(*made);
    if (!connect_cli_endpoint(link->made, "ferry train")) return std::unexpected("cannot connect to " + h);
    link->engine = std::make_unique<sync::SyncEngine>(*link->made.endpoint, link->made.target);
    links.push_back(std::move(link));
  }
  return links;
}

// Sends `signal` to every rank still running but `except`.
void signal_ranks(std::vector<RankRun>& ranks, const std::vector<bool>& ended, const std::string& signal, std::size_t except,
                  TerminalView& view) {
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i == except || ended[i] || !ranks[i].session) continue;
    if (auto r = ranks[i].session->signal(signal); !r) view.note("SIG" + signal + " to " + rank_name(ranks[i].slot) + ": " + r.error());
  }
}

// Follows every rank to its end: Ctrl-C interrupts them all (rank 0 checkpoints once, the ranks
// agree to stop at the same step), and the first failure stops the others.
std::vector<training::RankOutcome> supervise_ranks(std::vector<RankRun>& ranks, TerminalView& view, bool& interrupted) {
  RankEvents events;
  if (::pipe2(events.wake, O_CLOEXEC | O_NONBLOCK) != 0) return {};
  for (std::size_t i = 0; i < ranks.size(); ++i)
    ranks[i].follower = std::thread([&events, &ranks, i] { events.push(i, ranks[i].session->follow()); });
  std::vector<bool> ended(ranks.size(), false);
  std::vector<training::RankOutcome> outcomes;
  bool stopping = false;
  run::InterruptEscalation escalation;
  interrupted = false;
  while (outcomes.size() < ranks.size()) {
    pollfd fds[2] = {{events.wake[0], POLLIN, 0}, {g_interrupt_pipe[0], POLLIN, 0}};
    if (::poll(fds, g_interrupt_pipe[0] >= 0 ? 2 : 1, -1) < 0 && errno != EINTR) break;
    char buf[64];
    if (fds[1].revents & POLLIN) {
      while (::read(g_interrupt_pipe[0], buf, sizeof buf) > 0) {
      }
      auto step = escalation.next(ranks[0].run_id);
      interrupted = true;
      signal_ranks(ranks, ended, step.signal, ranks.size(), view);
      view.note(escalation.presses() == 1 ? "sent SIGINT to every rank: rank 0 writes one checkpoint and all stop; Ctrl-C again sends SIGTERM"
                                          : "sent SIG" + step.signal + " to every rank");
    }
    while (::read(events.wake[0], buf, sizeof buf) > 0) {
    }
    std::unique_lock lock(events.mu);
    while (!events.exits.empty()) {
      auto [i, exit] = std::move(events.exits.front());
      events.exits.pop_front();
      lock.unlock();
      ended[i] = true;
      training::RankOutcome out{ranks[i].slot, run::kFerryFailure, "", ""};
      if (exit) {
        out.status = run::exit_status(*exit);
        out.ended_at = exit->ended_at;
        out.description = run::describe(*exit);
      } else {
        out.description = exit.error();
      }
      // After Ctrl-C the ranks end 130/143 on their own, rank 0 after its checkpoint: no SIGTERM
      // may cut that short.
      const bool interrupted_exit = escalation.presses() > 0 && (out.status == 130 || out.status == 143);
      if (out.status != 0 && !stopping && !interrupted_exit) {
        stopping = true;
        view.note(rank_name(out.slot) + " ended (" + out.description + "): stopping the other ranks");
        signal_ranks(ranks, ended, "TERM", i, view);
      }
      outcomes.push_back(std::move(out));
      lock.lock();
    }
  }
  for (auto& r : ranks)
    if (r.follower.joinable()) r.follower.join();
  ::close(events.wake[0]);
  ::close(events.wake[1]);
  return outcomes;
}

// Starts every rank: the project synced to each host once (by its first rank), the trainer
// ensured there, then one run per rank with torchrun's environment.
std::expected<void, std::string> start_ranks(const TrainCliOptions& o, const TrainInputs& inputs, std::vector<RankRun>& ranks,
                                             const training::Rendezvous& rv, int world, TerminalView& view) {
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    auto& r = ranks[i];
    training::TrainSinks sinks;
    if (r.slot.rank == 0) {
      sinks.on_event = [&view](const training::TrainEvent& e, std::string_view line) { view.event(e, line); };
      sinks.on_other_stdout = [&view](std::string_view line) { view.other_stdout(line); };
    }
    const std::string prefix = "[" + rank_name(r.slot) + "] ";
    sinks.on_stderr = [&view, prefix](std::string_view bytes) { view.stderr_bytes(prefix + std::string(bytes)); };
    sinks.on_build = [&view](const training::BuildProgressParser& b) { view.build(b); };
    r.session = std::make_unique<training::TrainSession>(*r.link->made.endpoint, *r.link->engine, sinks);
    training::TrainRequest request;
    request.config = inputs.config;
    request.resume = o.resume;
    request.sync = !o.no_sync && r.slot.local_rank == 0;
    request.binary = o.trainer.empty() ? r.link->project.trainer : o.trainer;
    request.interpreter = r.link->project.interpreter;
    request.local_host = r.link->host == "local";
    request.env = inputs.env;
    for (auto& [k, v] : training::rank_env(r.slot, world, o.nproc_per_host, rv)) request.env[k] = v;
    auto id = r.session->start(request);
    if (!id) return std::unexpected(rank_name(r.slot) + ": " + id.error());
    r.run_id = *id;
    std::cerr << fmt::format("run {}: {} of {} (on {})\n", *id, rank_name(r.slot), world, r.link->made.endpoint->description());
  }
  return {};
}

int run_train_ranks(const GlobalOptions& g, const TrainCliOptions& o) {
  constexpr const char* who = "ferry train";
  auto inputs = train_inputs(g, o);
  if (!inputs) return inputs.error();
  std::vector<std::string> hosts{inputs->project.host};
  if (!o.hosts.empty()) {
    if (auto bad = training::split_hosts(o.hosts, hosts)) {
      std::cerr << who << ": " << *bad << "\n";
      return run::kUsageFailure;
    }
  }
  if (o.detach) {
    std::cerr << who << ": --detach is for one process; a multi-rank training is supervised while it runs\n";
    return run::kUsageFailure;
  }
  auto rv = rendezvous_for(g, inputs->project, o, hosts[0]);
  if (!rv) {
    std::cerr << who << ": " << rv.error() << "\n";
    return run::kUsageFailure;
  }
  std::vector<RankRun> ranks;
  for (const auto& slot : training::plan_ranks(hosts, o.nproc_per_host)) ranks.push_back(RankRun{slot, nullptr, nullptr, "", {}});
  auto links = open_hosts(g, inputs->project, hosts, ranks);
  if (!links) {
    std::cerr << who << ": " << links.error() << "\n";
    return run::kFerryFailure;
  }
  // The sessions use their host's endpoint and engine: they go first, whichever way this returns.
  struct SessionsFirst {
    std::vector<RankRun>& ranks;
    ~SessionsFirst() {
      for (auto& r : ranks) r.session.reset();
    }
  } sessions_first{ranks};
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    ranks[i].link = (*links)[i / static_cast<std::size_t>(o.nproc_per_host)].get();
    ranks[i].link->ranks.push_back(i);
  }
  TerminalView view(o.json);
  const int world = static_cast<int>(ranks.size());
  std::cerr << fmt::format("{} ranks on {} host(s), rendezvous {}:{}\n", world, hosts.size(), rv->master_addr, rv->master_port);
  if (::pipe2(g_interrupt_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_interrupt_pipe[0] = g_interrupt_pipe[1] = -1;
  struct sigaction sa {}, old {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old);
  std::vector<training::RankOutcome> outcomes;
  bool interrupted = false;
  auto started = start_ranks(o, *inputs, ranks, *rv, world, view);
  if (!started) {
    std::cerr << who << ": " << started.error() << "\n";
    std::vector<bool> ended(ranks.size(), false);
    for (std::size_t i = 0; i < ranks.size(); ++i) ended[i] = ranks[i].run_id.empty();
    signal_ranks(ranks, ended, "TERM", ranks.size(), view);
  } else {
    outcomes = supervise_ranks(ranks, view, interrupted);
  }
  ::sigaction(SIGINT, &old, nullptr);
  ::close(g_interrupt_pipe[0]);
  ::close(g_interrupt_pipe[1]);
  g_interrupt_pipe[0] = g_interrupt_pipe[1] = -1;
  view.finish();
  if (!started) return run::kFerryFailure;
  auto& rank0 = *ranks[0].session;
  if (rank0.saw_done() || rank0.last_checkpoint()) {
    auto pulled = rank0.pull_outputs();
    for (const auto& n : pulled.notes) std::cerr << who << ": " << n << "\n";
    for (const auto& f : pulled.files) (o.json ? std::cerr : std::cout) << fmt::format("{:<11}{}\n", "output", f.string());
  }
  auto failed = training::first_failure(outcomes);
  if (failed && interrupted && (failed->status == 130 || failed->status == 143)) {
    std::string again = o.launch.empty() ? o.config : "--launch " + o.launch;
    if (!o.hosts.empty()) again += " --hosts " + o.hosts;
    if (o.nproc_per_host > 1) again += " --nproc-per-host " + std::to_string(o.nproc_per_host);
    std::cerr << who << ": stopped by Ctrl-C; rank 0's checkpoint came back with the outputs, and `ferry train " << again
              << " --resume` continues on every rank (the next sync takes the checkpoint to the other hosts)\n";
    return failed->status;
  }
  if (failed) {
    std::cerr << who << ": " << rank_name(failed->slot) << " failed first (ferry-train " << failed->description
              << "); the other ranks were stopped\n";
    return failed->status;
  }
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<TrainCliOptions>();
  auto* cmd = app.add_subcommand("train", "Train a ferry-train config on the project's host: sync, run, progress, pull the plot and checkpoint");
  cmd->add_option("CONFIG", o->config, "ferry-train config (JSON), inside the project's mapping (or use --launch)");
  cmd->add_option("--launch", o->launch, "Train ferry.json's launch entry NAME (kind train; run and debug entries: "
                                         "ferry run/debug --launch), with its env over ferry.json's");
  cmd->add_flag("--resume", o->resume, "Continue from the newest checkpoint in the config's checkpoint dir");
  cmd->add_flag("--detach", o->detach, "Start the run, print its id and return (ferry attach ID follows it)");
  cmd->add_flag("--json", o->json, "Pass ferry-train's JSON-lines events through to stdout instead of the progress bar");
  cmd->add_flag("--no-sync", o->no_sync, "Do not push the project first");
  cmd->add_option("--trainer", o->trainer, "ferry-train on the box, one you built (default: ferry.json's trainer, else the one ferry builds and caches on the box; "
                               "local host: the one built with ferry)");
  cmd->add_option("--hosts", o->hosts, "Train on these hosts at once (ssh aliases, comma-separated; default the project's host): "
                                      "one rank per process, torch.distributed over Gloo (CPU) or NCCL (CUDA)");
  cmd->add_option("--nproc-per-host", o->nproc_per_host, "Processes (ranks) on each host, e.g. one per GPU")->check(CLI::Range(1, 1024));
  cmd->add_option("--master-addr", o->master_addr, "Rendezvous address of the first host as the others reach it "
                                                   "(default: its HostName from the ssh config)");
  cmd->add_option("--master-port", o->master_port, "Rendezvous port on the first host")->check(CLI::Range(1, 65535));
  cmd->callback([&g, o] {
    const bool many = !o->hosts.empty() || o->nproc_per_host > 1;
    exit_code() = many ? run_train_ranks(g, *o) : run_train(g, *o);
  });
}

}  // namespace ferry::cli

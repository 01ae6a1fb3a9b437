// `ferry train CONFIG --hosts a,b --nproc-per-host N`: one training over many processes and hosts.
// Every host is synced and gets its trainer, one run per rank starts with torchrun's environment,
// progress comes from rank 0, and the first failure stops the others (docs/train.md).
#include <chrono>
#include <ctime>
#include <deque>
#include <random>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "common/wakeup.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/train_terminal.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/run/interrupt_escalation.hpp"
#include "helper/run/run_exit.hpp"
#include "helper/ssh/ssh_config.hpp"
#include "helper/sync/project_endpoint.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/train/train_ranks.hpp"
#include "helper/train/train_session.hpp"
#include "protocol/link_state.hpp"

namespace ferry::cli::train_cli {
namespace {

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
  std::deque<std::pair<std::size_t, std::expected<run::RunExit, Error>>> exits;
  platform::Wakeup wake;
  void push(std::size_t i, std::expected<run::RunExit, Error> e) {
    {
      std::lock_guard lock(mu);
      exits.emplace_back(i, std::move(e));
    }
    wake.raise();
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
        if (s.state == protocol::LinkState::reconnecting) ranks[i].session->link_lost();
        else if (s.state == protocol::LinkState::connected) ranks[i].session->link_restored();
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
    if (auto r = ranks[i].session->signal(signal); !r) view.note("SIG" + signal + " to " + rank_name(ranks[i].slot) + ": " + r.error().message);
  }
}

// Follows every rank to its end: Ctrl-C interrupts them all (rank 0 checkpoints once, the ranks
// agree to stop at the same step), and the first failure stops the others.
std::vector<training::RankOutcome> supervise_ranks(std::vector<RankRun>& ranks, TerminalView& view, bool& interrupted,
                                                   platform::Wakeup& interrupt) {
  RankEvents events;
  for (std::size_t i = 0; i < ranks.size(); ++i)
    ranks[i].follower = std::thread([&events, &ranks, i] { events.push(i, ranks[i].session->follow()); });
  std::vector<bool> ended(ranks.size(), false);
  std::vector<training::RankOutcome> outcomes;
  bool stopping = false;
  run::InterruptEscalation escalation;
  interrupted = false;
  while (outcomes.size() < ranks.size()) {
    platform::Wakeup* wakeups[] = {&events.wake, &interrupt};
    platform::wait_any(wakeups);
    if (interrupt.take()) {
      auto step = escalation.next(ranks[0].run_id);
      interrupted = true;
      signal_ranks(ranks, ended, step.signal, ranks.size(), view);
      view.note(escalation.presses() == 1 ? "sent SIGINT to every rank: rank 0 writes one checkpoint and all stop; Ctrl-C again sends SIGTERM"
                                          : "sent SIG" + step.signal + " to every rank");
    }
    events.wake.take();
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
        out.description = exit.error().message;
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
  return outcomes;
}

// Starts every rank: the project synced to each host once (by its first rank), the trainer
// ensured there, then one run per rank with torchrun's environment.
// "train-20261201T101500-3fa2": the group the ranks' runs carry.
std::string new_group_id() {
  std::random_device rd;
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  const std::tm tm = fmt::gmtime(t);  // gmtime_r or gmtime_s, whichever the platform has
  char when[32];
  std::strftime(when, sizeof when, "%Y%m%dT%H%M%S", &tm);
  return fmt::format("train-{}-{:04x}", when, rd() & 0xffff);
}

std::expected<void, std::string> start_ranks(const TrainCliOptions& o, const TrainInputs& inputs, std::vector<RankRun>& ranks,
                                             const training::Rendezvous& rv, int world, TerminalView& view) {
  const std::string group = new_group_id();
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
    // `ferry runs` shows the ranks as one group (the agent reads these from the run's environment).
    request.env["FERRY_RUN_GROUP"] = group;
    request.env["FERRY_RUN_LABEL"] = "rank " + std::to_string(r.slot.rank) + " of " + std::to_string(world) + " on " + r.slot.host;
    auto id = r.session->start(request);
    if (!id) return std::unexpected(rank_name(r.slot) + ": " + id.error().message);
    r.run_id = *id;
    std::cerr << fmt::format("run {}: {} of {} (on {})\n", *id, rank_name(r.slot), world, r.link->made.endpoint->description());
  }
  return {};
}

}  // namespace

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
  if (inputs->project.slurm) {
    std::cerr << who << ": on a Slurm cluster ranks are started by srun, not by ferry: --hosts and --nproc-per-host "
                        "would run them on the login node: set \"nodes\" in ferry.json's slurm block for a multi-node training (docs/slurm.md)\n";
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
  // Ctrl-C raises a wakeup supervise_ranks acts on (SIGTERM keeps its default).
  auto stop = std::make_unique<platform::StopRequests>(false);
  std::vector<training::RankOutcome> outcomes;
  bool interrupted = false;
  auto started = start_ranks(o, *inputs, ranks, *rv, world, view);
  if (!started) {
    std::cerr << who << ": " << started.error() << "\n";
    std::vector<bool> ended(ranks.size(), false);
    for (std::size_t i = 0; i < ranks.size(); ++i) ended[i] = ranks[i].run_id.empty();
    signal_ranks(ranks, ended, "TERM", ranks.size(), view);
  } else {
    outcomes = supervise_ranks(ranks, view, interrupted, stop->wakeup());
  }
  stop.reset();
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
  return exit_status::kOk;
}

}  // namespace ferry::cli::train_cli

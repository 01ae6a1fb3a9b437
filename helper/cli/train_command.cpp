// `ferry train CONFIG|--launch NAME [--resume] [--detach] [--json]`: sync, run ferry-train CONFIG on the
// project's host as a run (it survives a dropped link), show its events as a progress bar (or
// pass the JSON lines through), pull the plot, CSV and newest checkpoint back, and exit with
// ferry-train's status. Ctrl-C interrupts ferry-train, which checkpoints and exits 130. With --hosts or
// --nproc-per-host the training spans many ranks: train_ranks_command.cpp.
#include <atomic>
#include <filesystem>
#include <map>
#include <iostream>
#include <memory>
#include <mutex>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "common/terminal.hpp"
#include "common/wakeup.hpp"
#include "helper/cli/commands.hpp"
#include "helper/run/slurm_allocation.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/relay_endpoint.hpp"
#include "helper/server/sync_result.hpp"
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
#include "helper/cli/train_terminal.hpp"
#include "protocol/link_state.hpp"

namespace ferry::cli {
namespace train_cli {


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
  if (!o.host.empty()) project->host = o.host;
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

// A training's link: the project's live ferry (relayed: no login of its own) when one of this build
// is linked, else one of its own. A Slurm project's goes its own way (its allocation's agent).
struct TrainLink {
  std::unique_ptr<remote::Endpoint> endpoint;
  sync::SyncTarget target;
  RelayEndpoint* riding = nullptr;
};

std::expected<TrainLink, int> train_link(const GlobalOptions& g, const deploy::ProjectConfig& project,
                                         const sync::ProjectEndpointOptions& eo, const char* who) {
  TrainLink link;
  if (project.host != "local" && !project.slurm)
    if (auto relay = relay_for(g, project)) {
      relay->on_state(eo.on_state);
      link.target = sync::mapping_target(project, project.mappings.front());
      link.riding = relay.get();
      link.endpoint = std::move(relay);
      return link;
    }
  auto made = sync::make_project_endpoint(project, eo);
  if (!made) {
    std::cerr << who << ": " << made.error().message << "\n";
    return std::unexpected(run::kUsageFailure);
  }
  if (!connect_cli_endpoint(*made, who)) return std::unexpected(run::kFerryFailure);
  link.endpoint = std::move(made->endpoint);
  link.target = made->target;
  return link;
}

// Riding: the live ferry pushes before the run and pulls the outputs after (its warm index), and
// finds or builds the box's ferry-train on its link (trainer/ensure, its bar on stderr).
int ride_training(RelayEndpoint& relay, const deploy::ProjectConfig& project, training::TrainSession& session,
                  training::TrainRequest& request, const char* who) {
  const std::string root = project.root.string();
  training::TrainSync through;
  through.push = [&relay, &project] { return relay.push_project(project.root); };
  through.pull = [&relay, root](const std::vector<std::string>& paths) -> std::expected<sync::SyncSummary, ferry::Error> {
    auto r = relay.live().call("sync/pull", nlohmann::json{{"path", root}, {"paths", paths}, {"force", true}});
    if (!r) return std::unexpected(ferry::Error(ferry::ErrorKind::agent_lost, r.error().message));
    return server::summary_from_json(*r);
  };
  session.sync_through(std::move(through));
  if (!request.binary.empty()) return 0;
  const bool tty = platform::is_terminal(2);
  auto bar = [tty](const nlohmann::json& v) {
    if (v.value("kind", "") == "report" && v.contains("message")) std::cerr << (tty ? "\r" : "") << v["message"].get<std::string>() << (tty ? "" : "\n");
  };
  auto t = relay.live().call("trainer/ensure", nlohmann::json{{"path", root}, {"interpreter", request.interpreter}, {"env", request.env}}, bar);
  if (tty) std::cerr << "\r\x1b[K";
  if (!t) {
    std::cerr << who << ": " << t.error().message << "\n";
    return run::kFerryFailure;
  }
  request.binary = t->value("path", "");
  if (t->value("built", false)) std::cerr << "built " << request.binary << " on " << relay.description() << " (" << t->value("version", "") << ")\n";
  return 0;
}

int run_train(const GlobalOptions& g, const TrainCliOptions& o) {
  constexpr const char* who = "ferry train";
  auto inputs = train_inputs(g, o);
  if (!inputs) return inputs.error();
  const fs::path& config = inputs->config;
  const deploy::ProjectConfig& project = inputs->project;
  const bool local = project.host == "local";
  if (o.nodes && !project.slurm) {
    std::cerr << who << ": --nodes is for a Slurm project (ferry.json's slurm block); across boxes: --hosts\n";
    return run::kUsageFailure;
  }
  std::atomic<training::TrainSession*> live{nullptr};
  sync::ProjectEndpointOptions eo = cli_endpoint_options(g);
  // A training run outlives link drops: reconnect and re-attach where the stream stopped.
  eo.reconnect = true;
  eo.on_state = [&live](const remote::HostState& s) {
    auto* session = live.load();
    if (s.state == protocol::LinkState::reconnecting) {
      std::cerr << "ferry train: link to " << s.host << " lost (" << s.message << "); the run goes on, reconnecting\n";
      if (session) session->link_lost();
    } else if (s.state == protocol::LinkState::connected && session) {
      session->link_restored();
    }
  };
  auto link = train_link(g, project, eo, who);
  if (!link) return link.error();
  auto& endpoint = link->endpoint;
  sync::SyncEngine engine(*endpoint, link->target);

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
  request.slurm = project.slurm;
  if (request.slurm && o.nodes) request.slurm->nodes = *o.nodes;
  // With `ferry alloc`'s allocation the training is a step of it, started at once.
  if (auto job = project.slurm ? run::running_allocation(*endpoint, project)
                               : std::expected<std::optional<run::SlurmJobInfo>, protocol::ResponseError>(std::nullopt);
      !job) {
    std::cerr << who << ": cannot ask Slurm for this project's allocation: " << job.error().message << "\n";
    return run::kFerryFailure;
  } else if (*job) {
    request.allocation = (*job)->job_id;
    std::cerr << "ferry: into " << run::describe_allocation(**job) << "\n";
  }
  if (link->riding)
    if (int rc = ride_training(*link->riding, project, session, request, who); rc != 0) return rc;
  auto id = session.start(request);
  if (!id) {
    std::cerr << who << ": " << id.error().message << "\n";
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
    return exit_status::kOk;
  }

  // Ctrl-C while following raises a wakeup the follow loop acts on (SIGTERM keeps its default).
  auto stop = std::make_unique<platform::StopRequests>(false);
  run::InterruptEscalation escalation;
  auto followed = session.follow(&stop->wakeup(), [&] {
    auto step = escalation.next(*id);
    auto sent = session.signal(step.signal, /*kill_on_disconnect=*/true);
    if (!sent) {
      view.note("sending SIG" + step.signal + ": " + sent.error().message);
    } else if (escalation.presses() == 1) {
      const std::string again = o.launch.empty() ? o.config : "--launch " + o.launch;
      view.note("sent SIGINT to ferry-train (run " + *id + "): it writes a checkpoint and exits 130; `ferry train " + again +
                " --resume` continues. Ctrl-C again sends SIGTERM.");
    } else {
      view.note(step.note);
    }
  });
  stop.reset();
  live = nullptr;
  view.finish();
  if (!followed) {
    std::cerr << who << ": " << followed.error().message << "\n";
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

}  // namespace train_cli

using namespace train_cli;

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
  cmd->add_option("--nodes", o->nodes, "On a Slurm project: train on this many nodes as one job (srun starts a rank on each; "
                                       "default ferry.json's slurm.nodes)")->check(CLI::Range(1, 100000));
  cmd->add_option("--nproc-per-host", o->nproc_per_host, "Processes (ranks) on each host, e.g. one per GPU")->check(CLI::Range(1, 1024));
  cmd->add_option("--master-addr", o->master_addr, "Rendezvous address of the first host as the others reach it "
                                                   "(default: its HostName from the ssh config)");
  cmd->add_option("--master-port", o->master_port, "Rendezvous port on the first host")->check(CLI::Range(1, 65535));
  cmd->callback([&g, o] {
    const bool many = !o->hosts.empty() || o->nproc_per_host > 1;
    g.exit_code = many ? run_train_ranks(g, *o) : run_train(g, *o);
  });
}

}  // namespace ferry::cli

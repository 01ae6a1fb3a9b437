// `ferry resume RUN [--host NEW]`: continue an interrupted ferry-train run (a spot reclaim, a
// Ctrl-C, a lost box) on the same box or another one. The run's record on the old box names its
// config; its checkpoint (and output_dir's CSV/events) is pulled from the old box while that box
// still answers, so the project holds it; then `ferry train CONFIG --resume` syncs the project to
// the new box (the checkpoint travels with it) and continues from the newest checkpoint.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/path_within.hpp"
#include "helper/cli/commands.hpp"
#include "helper/cli/train_terminal.hpp"
#include "helper/run/run_exit.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/train/train_launch.hpp"
#include "protocol/messages_run.hpp"
#include "protocol/json_parse.hpp"

namespace ferry::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
constexpr const char* who = "ferry resume";

struct ResumeOptions {
  std::string run, host, config, trainer, hosts;
  bool json = false, detach = false, no_pull = false;
};

// The run's config in the local project, from its record: argv [trainer, CONFIG, ...] and cwd
// (relative to the agent's root; the mapping lies at remote_base under it).
std::expected<fs::path, std::string> config_of(const json& run, const sync::SyncTarget& target) {
  const json argv = run.value("argv", json::array());
  if (argv.size() < 2 || !argv[0].is_string() || !argv[1].is_string() ||
      fs::path(argv[0].get<std::string>()).filename() != "ferry-train")
    return std::unexpected("run " + run.value("id", std::string()) + " is not a ferry-train run (" + argv.dump() +
                           "): only trainings resume from a checkpoint");
  std::string cwd = run.value("cwd", std::string("."));
  if (!target.remote_base.empty()) {
    const fs::path rel = fs::path(cwd).lexically_relative(target.remote_base);
    if (rel.empty() || rel.string().starts_with("..")) return std::unexpected("run's directory " + cwd + " is outside the project's mapping");
    cwd = rel.string();
  }
  auto config = training::join_inside(cwd, argv[1].get<std::string>());
  if (!config) return std::unexpected("run's config " + argv[1].get<std::string>() + " is outside the project's mapping");
  return target.local_root / *config;
}

// The mapping-relative paths a resume needs: output_dir's CSV, events and plot, and the
// checkpoint dir (ferry-train's output_dir/checkpoint.dir, relative to the config's directory).
std::expected<std::vector<std::string>, std::string> run_outputs(const fs::path& config, const sync::SyncTarget& target) {
  std::ifstream in(config);
  json j = protocol::parse_json_text(std::string(std::istreambuf_iterator<char>(in), {})).value_or(json());
  if (!j.is_object()) return std::unexpected(config.string() + " is not a JSON object (the run's config)");
  const std::string cwd = ferry::posix::relative_to(config.parent_path(), target.local_root).generic_string();
  auto outputs = training::train_outputs(j, cwd.empty() ? "." : cwd, std::nullopt);
  if (!outputs) return std::unexpected(outputs.error());
  std::vector<std::string> paths = outputs->files;
  std::string dir = "checkpoints";
  if (j.contains("checkpoint") && j["checkpoint"].is_object()) dir = j["checkpoint"].value("dir", dir);
  if (fs::path(dir).is_absolute()) return paths;  // shared storage: the new box sees it itself
  if (auto ck = training::join_inside(outputs->output_dir, dir)) paths.push_back(*ck);
  return paths;
}

// Asks the old box for the run and pulls its outputs; fills `config` unless --config gave it.
// Returns false (after a message) when the run cannot be resumed at all.
bool bring_checkpoint(const GlobalOptions& g, const deploy::ProjectConfig& project, const ResumeOptions& o, fs::path& config) {
  auto made = sync::make_project_endpoint(project, cli_endpoint_options(g));
  if (!made) {
    std::cerr << who << ": " << made.error().message << "\n";
    return false;
  }
  auto& endpoint = made->endpoint;
  if (auto c = sync::connect_project_endpoint(*made); !c) {
    std::cerr << who << ": the run's box " << project.host << " does not answer (" << c.error().message << ")";
    if (config.empty()) {
      std::cerr << ": give --config CONFIG (the run's ferry-train config) to resume from the checkpoint already in the "
                   "project (ferry train pulls it when a run stops)\n";
      return false;
    }
    std::cerr << "; resuming from the checkpoint already in the project\n";
    return true;
  }
  auto list = endpoint->call("run/list", json{{"all", true}});
  if (!list) {
    std::cerr << who << ": run/list on " << project.host << ": " << list.error().message << "\n";
    return false;
  }
  const json runs = list->value("runs", json::array());
  auto it = std::find_if(runs.begin(), runs.end(), [&](const json& r) { return r.value("id", std::string()) == o.run; });
  if (it == runs.end()) {
    std::cerr << who << ": no run " << o.run << " on " << project.host << " (`ferry runs --all` lists them)\n";
    return false;
  }
  if (protocol::run_state_from_string(it->value("state", std::string())) == protocol::RunState::running) {
    std::cerr << who << ": run " << o.run << " is still running on " << project.host << ": stop it with a checkpoint first (`ferry kill "
              << o.run << " --signal TERM`), or follow it with `ferry attach " << o.run << "`\n";
    return false;
  }
  if (config.empty()) {
    auto c = config_of(*it, made->target);
    if (!c) {
      std::cerr << who << ": " << c.error() << "\n";
      return false;
    }
    config = *c;
  }
  if (o.no_pull) return true;
  auto paths = run_outputs(config, made->target);
  if (!paths) {
    std::cerr << who << ": " << paths.error() << "\n";
    return false;
  }
  sync::SyncEngine engine(*endpoint, made->target);
  sync::SyncOptions so;
  so.force = true;  // the outputs are the box's to write, as `ferry train` pulls them
  auto pulled = engine.pull(*paths, so);
  endpoint->close();
  if (!pulled) {
    std::cerr << who << ": pulling the checkpoint from " << project.host << ": " << pulled.error().message << "\n";
    return false;
  }
  for (const auto& e : pulled->errors) std::cerr << who << ": " << e << "\n";
  std::cerr << "pulled run " << o.run << "'s checkpoint and outputs from " << project.host << "\n";
  return true;
}

int run_resume(const GlobalOptions& g, const ResumeOptions& o) {
  auto project = cli_project_or_usage(g, who);
  if (!project) return project.error();
  std::error_code ec;
  fs::path config = o.config.empty() ? fs::path() : fs::absolute(o.config, ec);
  if (!bring_checkpoint(g, *project, o, config)) return run::kUsageFailure;
  train_cli::TrainCliOptions t;
  t.config = config.string();
  t.resume = true;
  t.json = o.json;
  t.detach = o.detach;
  t.trainer = o.trainer;
  t.hosts = o.hosts;
  t.host = o.host;
  std::cerr << "resuming " << config.string() << " on " << (o.hosts.empty() ? (o.host.empty() ? project->host : o.host) : o.hosts) << "\n";
  return o.hosts.empty() ? train_cli::run_train(g, t) : train_cli::run_train_ranks(g, t);
}

}  // namespace

void add_resume_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<ResumeOptions>();
  auto* cmd = app.add_subcommand("resume", "Continue an interrupted ferry-train run (spot reclaim, Ctrl-C) from its checkpoint, on this or another box");
  cmd->add_option("RUN", o->run, "The run's id on ferry.json's host (`ferry runs --all`)")->required();
  cmd->add_option("--host", o->host, "Continue on this host (an ssh alias; default ferry.json's host, where the run was)");
  cmd->add_option("--hosts", o->hosts, "Continue as one training over these hosts (as ferry train --hosts)");
  cmd->add_option("--config", o->config, "The run's config, when its box no longer answers (else read from the run's record)");
  cmd->add_flag("--no-pull", o->no_pull, "Do not pull the checkpoint from the run's box (it is already in the project)");
  cmd->add_option("--trainer", o->trainer, "ferry-train on the new box (as ferry train --trainer)");
  cmd->add_flag("--detach", o->detach, "Start the resumed run, print its id and return");
  cmd->add_flag("--json", o->json, "Pass ferry-train's JSON-lines events through to stdout");
  cmd->footer("The run's record on ferry.json's host names its config; its checkpoint dir and output_dir's CSV and events are\n"
              "pulled into the project while that box answers (else the copy `ferry train` pulled when the run stopped is used),\n"
              "then `ferry train CONFIG --resume` syncs the project to the new box and continues. Exit status as ferry train.");
  cmd->fallthrough();
  cmd->callback([&g, o] { g.exit_code = run_resume(g, *o); });
}

}  // namespace ferry::cli

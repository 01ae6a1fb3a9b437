// `ferry spot aws|gcp|URL|FILE | --status | --cancel`: arm the box's spot-interruption watcher
// (remote-runtime/agent/autostop/spot_watch.hpp): on a notice, ferry-train runs get SIGTERM and
// checkpoint, and the notice is recorded on the box.
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/relay_endpoint.hpp"

namespace ferry::cli {

namespace {

struct SpotOptions {
  std::string source;
  bool status = false, cancel = false, as_json = false;
  double poll = 1;
};

int run_spot(const GlobalOptions& g, const SpotOptions& o) {
  const std::string who = "ferry spot";
  if ((o.status ? 1 : 0) + (o.cancel ? 1 : 0) + (o.source.empty() ? 0 : 1) > 1) {
    std::cerr << who << ": give one of SOURCE (aws, gcp, an http:// URL or an absolute file path), --status or --cancel\n";
    return exit_status::kUsage;
  }
  auto project = find_cli_project(g);
  if (!project) {
    std::cerr << who << ": " << project.error() << "\n";
    return exit_status::kUsage;
  }
  if (project->slurm && !o.source.empty()) {
    std::cerr << who << ": the host is a Slurm cluster's login node: Slurm preempts and requeues jobs itself (a job's state "
                         "says PREEMPTED), there is no cloud spot notice to watch there\n";
    return exit_status::kUsage;
  }
  std::string method = o.cancel ? "spot/cancel" : "spot/status";
  nlohmann::json params = nlohmann::json::object();
  if (!o.source.empty()) {
    method = "spot/watch";
    params["pollSeconds"] = o.poll;
    if (o.source == "aws" || o.source == "gcp") params["source"] = o.source;
    else if (o.source.starts_with("http://")) params["source"] = "url", params["url"] = o.source;
    else if (o.source.starts_with("/")) params["source"] = "file", params["path"] = o.source;
    else {
      std::cerr << who << ": SOURCE is aws, gcp, an http:// URL or an absolute file path on the host, not '" << o.source << "'\n";
      return exit_status::kUsage;
    }
  }
  // Through the project's live ferry when there is one (no login); else a link of its own.
  auto endpoint = agent_endpoint(g, *project, who);
  if (!endpoint) return endpoint.error();
  auto reply = (*endpoint)->call(method, params);
  (*endpoint)->close();
  if (!reply) {
    std::cerr << who << ": " << reply.error().message << "\n";
    return exit_status::kFailed;
  }
  if (o.as_json) {
    std::cout << reply->dump(2) << "\n";
    return exit_status::kOk;
  }
  if (reply->value("watching", false)) std::cout << "watching for spot interruptions: " << (*reply)["settings"].dump() << "\n";
  else std::cout << "not watching for spot interruptions\n";
  if (reply->contains("notice")) {
    const auto& notice = (*reply)["notice"];
    std::cout << "last notice: " << notice.value("notice", std::string()) << "; SIGTERM sent to runs " << notice["runs"].dump() << "\n";
    if (notice["runs"].is_array() && !notice["runs"].empty() && notice["runs"][0].is_string())
      std::cout << "continue one on another box: ferry resume " << notice["runs"][0].get<std::string>() << " --host NEWBOX\n";
  }
  return exit_status::kOk;
}

}  // namespace

void add_spot_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<SpotOptions>();
  auto* cmd = app.add_subcommand("spot", "Watch the host for a spot interruption notice; ferry-train runs then checkpoint and stop");
  cmd->add_option("source", o->source, "aws (instance-action metadata), gcp (preemption metadata), an http:// URL, or a file on the host");
  cmd->add_flag("--status", o->status, "Show what is watched and the last notice (the default without SOURCE)");
  cmd->add_flag("--cancel", o->cancel, "Stop watching");
  cmd->add_option("--poll", o->poll, "Seconds between looks (default 1)")->check(CLI::Range(0.1, 60.0));
  cmd->add_flag("--json", o->as_json, "Print the agent's answer as JSON");
  cmd->footer("On a notice: SIGTERM to every live run whose command is ferry-train (it checkpoints and exits 143),\n"
              "the notice recorded on the host (~/.cache/ferry/state/spot/), ferry serve's editor told.\n"
              "Continue a stopped training on a new box with `ferry resume RUN --host NEWBOX`.");
  cmd->fallthrough();
  cmd->callback([&g, o] { g.exit_code = run_spot(g, *o); });
}

}  // namespace ferry::cli

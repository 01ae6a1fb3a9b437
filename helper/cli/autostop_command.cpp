// `ferry autostop 30m | --status | --cancel`: arm, inspect or disarm the agent's idle watchdog on
// the project's host (remote-runtime/agent/autostop/). Options not given come from ferry.json's
// autostop block.
#include <iostream>
#include <cmath>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/relay_endpoint.hpp"
#include "helper/cloud/cost_estimate.hpp"
#include "helper/cloud/notifier.hpp"
#include "helper/deploy/autostop_params.hpp"

namespace ferry::cli {

namespace {

struct AutostopOptions {
  std::string idle;
  bool status = false, cancel = false, as_json = false;
  std::string action, command, pre_stop;
  int gpu_util_below = 0;
};

std::string describe_status(const nlohmann::json& s) {
  std::string out;
  if (s.value("armed", false)) {
    const auto& set = s["settings"];
    double idle = set.value("idleSeconds", 0.0);
    std::string after = idle >= 60 && std::fmod(idle, 60.0) == 0 ? fmt::format("{:.0f} min", idle / 60) : fmt::format("{:g} s", idle);
    out += fmt::format("autostop armed: {} after {} idle", set.value("action", "stop"), after);
    if (set.contains("command")) out += fmt::format(" ({})", set["command"].get<std::string>());
    out += fmt::format(" (GPUs under {} %, no live run, no connected helper)\n", set.value("gpuUtilBelow", 5));
    if (set.contains("preStop")) out += "  before it: " + set["preStop"].get<std::string>() + "\n";
    if (set.contains("webhookTo"))
      out += "  webhook: " + set["webhookTo"].get<std::string>() + " (posted from the host through its curl)\n";
    const auto& w = s["watchdog"];
    if (!w.value("running", false)) out += "  watchdog: not running (the next agent start restarts it)\n";
    else if (w.contains("status")) {
      const auto& st = w["status"];
      out += st.contains("busy") ? fmt::format("  watchdog: busy ({}), checked {}\n", st["busy"].get<std::string>(), st.value("checkedAt", ""))
                                 : fmt::format("  watchdog: idle for {:.0f} s, checked {}\n", st.value("idleForSeconds", 0.0), st.value("checkedAt", ""));
    }
  } else {
    out += "autostop: not armed\n";
  }
  if (s.contains("lastEvent")) out += fmt::format("  last event: {} at {}\n", s["lastEvent"].value("event", "?"), s["lastEvent"].value("at", "?"));
  return out;
}

int run_autostop(const GlobalOptions& g, const AutostopOptions& o) {
  const std::string who = "ferry autostop";
  if ((o.status ? 1 : 0) + (o.cancel ? 1 : 0) + (o.idle.empty() ? 0 : 1) > 1) {
    std::cerr << who << ": give one of IDLE (e.g. 30m), --status or --cancel\n";
    return exit_status::kUsage;
  }
  auto project = cli_project_or_usage(g, who);
  if (!project) return project.error();
  nlohmann::json params;
  std::string method = "autostop/status";
  if (o.cancel) method = "autostop/cancel";
  if (!o.idle.empty()) {
    auto hours = cloud::parse_hours(o.idle);
    if (!hours) {
      std::cerr << who << ": IDLE " << hours.error() << "\n";
      return exit_status::kUsage;
    }
    deploy::AutostopConfig a = project->autostop;
    if (!o.action.empty()) a.action = o.action;
    if (!o.command.empty()) a.command = o.command;
    if (!o.pre_stop.empty()) a.pre_stop = o.pre_stop;
    if (o.gpu_util_below) a.gpu_util_below = o.gpu_util_below;
    if (a.action != "command") a.command.clear();
    if (a.action == "command" && a.command.empty()) {
      std::cerr << who << ": --action command needs --command CMD\n";
      return exit_status::kUsage;
    }
    if (auto refused = deploy::autostop_refusal(project->host, a, project->slurm.has_value())) {
      std::cerr << who << ": " << *refused << "\n";
      return exit_status::kUsage;
    }
    params = deploy::autostop_set_params(a, *hours * 3600);
    if (auto hook = cloud::autostop_webhook_param()) params["webhook"] = *hook;
    method = "autostop/set";
  }
  // Through the project's live ferry when there is one (no login); else a link of its own.
  auto endpoint = agent_endpoint(g, *project, who);
  if (!endpoint) return endpoint.error();
  auto reply = (*endpoint)->call(method, params.is_null() ? nlohmann::json::object() : params);
  (*endpoint)->close();
  if (!reply) {
    std::cerr << who << ": " << reply.error().message << "\n";
    return exit_status::kFailed;
  }
  if (o.as_json) std::cout << reply->dump(2) << "\n";
  else std::cout << (o.cancel && !reply->value("wasArmed", false) ? "autostop was not armed\n" : describe_status(*reply));
  return exit_status::kOk;
}

}  // namespace

void add_autostop_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<AutostopOptions>();
  auto* cmd = app.add_subcommand("autostop", "Stop the host (or notify, or run a command) after it has been idle this long");
  cmd->add_option("idle", o->idle, "Idle time before acting: 30m, 2h, 90s (idle = no live run, no connected helper, GPUs quiet)");
  cmd->add_flag("--status", o->status, "Show what is armed and what the watchdog last saw (the default without IDLE)");
  cmd->add_flag("--cancel", o->cancel, "Disarm");
  cmd->add_option("--action", o->action, "stop (shutdown -h now, through sudo -n when not root), notify, or command")
      ->check(CLI::IsMember({"stop", "notify", "command"}));
  cmd->add_option("--command", o->command, "With --action command: what to run on the host");
  cmd->add_option("--pre-stop", o->pre_stop, "Run on the host first (upload results, copy checkpoints)");
  cmd->add_option("--gpu-util-below", o->gpu_util_below, "GPU utilization (%) under which the GPUs count as idle (default 5)")
      ->check(CLI::Range(1, 100));
  cmd->add_flag("--json", o->as_json, "Print the agent's answer as JSON");
  cmd->footer("The watchdog runs on the host: it acts with your laptop closed, survives agent restarts, and never\n"
              "fires while a ferry run is live or a helper (ferry serve, any ferry command) is connected.\n"
              "ferry.json's \"autostop\" block arms it whenever ferry serve connects.\n"
              "With $FERRY_WEBHOOK_URL (or the variable $FERRY_WEBHOOK_ENV names) set, the host posts an\n"
              "\"autostop.fired\" notice to it through its curl; the URL stays in the watchdog's memory only.");
  cmd->fallthrough();
  cmd->callback([&g, o] { g.exit_code = run_autostop(g, *o); });
}

}  // namespace ferry::cli

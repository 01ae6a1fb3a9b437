// `ferry connect [HOST]`: resolves the host like ssh, checks its key, authenticates, installs or
// reuses ferry-agent and completes the agent handshake, then reports what it found; for a
// project that trains it also checks ferry-train there and starts its build in the background.
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "ferry/version.hpp"
#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/deploy/project_config.hpp"
#include "helper/remote/endpoint_factory.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/train/trainer_install.hpp"
#include "helper/ssh/passphrase_prompt.hpp"
#include "protocol/link_state.hpp"

namespace ferry::cli {

std::expected<SshTarget, std::string> ssh_target(const GlobalOptions& g, const std::string& host_arg,
                                                 const std::string& root_arg) {
  // The project fills in whatever the command line left out.
  std::error_code ec;
  std::filesystem::path start = g.project_dir ? std::filesystem::path(*g.project_dir) : std::filesystem::current_path(ec);
  std::optional<deploy::ProjectConfig> project;
  if (auto file = deploy::find_project_file(start)) {
    auto loaded = deploy::load_project(*file);
    if (loaded) project = std::move(*loaded);
    else if (host_arg.empty()) return std::unexpected(loaded.error().to_string());
    if (project)
      if (auto admitted = admit_cli_project(g, *project); !admitted) return std::unexpected(admitted.error());
  }
  return remote::make_ssh_target(host_arg, root_arg, g.ssh_config, project ? &*project : nullptr);
}

remote::SshEndpointOptions endpoint_options(const SshTarget& t) {
  remote::SshEndpointOptions o = remote::ssh_endpoint_options(t);
  o.session.passphrase = ssh::terminal_passphrase_provider();
  o.reconnect = false;
  o.on_state = [](const remote::HostState& s) {
    if (s.state == protocol::LinkState::connecting) std::cerr << "ferry: connecting to " << s.message << "\n";
  };
  return o;
}

std::string cannot_reach(const std::string& who, const std::string& where, const remote::ResponseError& error) {
  std::string out = who + ": cannot reach " + where + ": " + error.message;
  if (auto next = remote::connect_next_step(error); !next.empty()) out += "; " + next + " (`ferry doctor` checks each step)";
  return out;
}

namespace {

struct ConnectOptions {
  std::string host;
  std::string root;
  bool json = false;
  bool build_trainer = false;     // wait for the trainer's build
  bool no_build_trainer = false;  // leave the trainer alone
  int timeout_s = 30;
};

// ferry.json's env around the cwd (or --project): the trainer's probe and build export it.
std::map<std::string, std::string> project_env(const GlobalOptions& g) {
  auto project = find_cli_project(g, std::nullopt);
  return project ? project->env : std::map<std::string, std::string>{};
}

// A plain connect starts the trainer's build only for a project that trains with the trainer
// ferry builds (no `trainer` key): other projects connect with no probe at all.
bool wants_trainer(const GlobalOptions& g) {
  auto project = find_cli_project(g, std::nullopt);
  if (!project || !project->trainer.empty() || project->host == "local") return false;
  bool train_launch = false;
  for (const auto& l : project->launch) train_launch = train_launch || l.kind == "train";
  return training::project_trains(project->root, train_launch);
}

// The default for a training project: ready, or its build started on the box and left running.
std::expected<training::TrainerBackgroundBuild, std::string> start_trainer(const GlobalOptions& g, remote::SshEndpoint& e,
                                                                           const std::string& interpreter) {
  training::TrainerInstallOptions options;
  options.interpreter = interpreter;
  options.env = project_env(g);
  return training::start_trainer_build(e, options);
}

// --build-trainer: ferry-train on the box, built there now if missing (progress on stderr).
std::expected<training::TrainerInstall, std::string> connect_trainer(const GlobalOptions& g, remote::SshEndpoint& e,
                                                                     const std::string& interpreter) {
  training::TrainerInstallOptions options;
  options.interpreter = interpreter;
  options.env = project_env(g);
  options.on_progress = [](const training::BuildProgressParser& b) { std::cerr << b.bar(100) << "\n" << std::flush; };
  return training::ensure_trainer(e, options);
}

int run_connect(const GlobalOptions& g, const ConnectOptions& o) {
  auto target = ssh_target(g, o.host, o.root);
  if (!target) {
    std::cerr << "ferry connect: " << target.error() << "\n";
    return exit_status::kUsage;
  }
  remote::SshEndpoint e(endpoint_options(*target));
  auto start = std::chrono::steady_clock::now();
  auto info = e.connect(std::chrono::seconds(o.timeout_s));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  if (!info) {
    if (o.json) {
      nlohmann::json j{{"ok", false}, {"error", info.error().message}};
      if (info.error().data) j["data"] = *info.error().data;
      std::cout << j.dump(2) << "\n";
    } else {
      std::cerr << cannot_reach("ferry connect", e.description(), info.error()) << "\n";
    }
    return exit_status::kFailed;
  }
  std::optional<std::expected<training::TrainerInstall, std::string>> trainer;
  std::optional<std::expected<training::TrainerBackgroundBuild, std::string>> background;
  if (o.build_trainer) trainer = connect_trainer(g, e, target->interpreter);
  else if (!o.no_build_trainer && wants_trainer(g)) background = start_trainer(g, e, target->interpreter);
  if (background && *background && (*background)->ready) trainer = std::move(*(*background)->ready);
  auto hk = e.host_key();
  auto rep = e.install_report();
  if (o.json) {
    nlohmann::json j{{"ok", true},
                     {"host", target->host},
                     {"endpoint", e.description()},
                     {"ms", ms},
                     {"hostKey", {{"type", hk.key.type}, {"fingerprint", hk.fingerprint}, {"recorded", hk.newly_recorded}}},
                     {"agent", {{"version", info->version}, {"path", rep.remote_path}, {"installed", rep.installed}}},
                     {"root", info->root},
                     {"os", info->os},
                     {"arch", info->arch},
                     {"hostname", info->hostname}};
    if (trainer && *trainer)
      j["trainer"] = {{"path", (*trainer)->path}, {"built", (*trainer)->built}, {"version", (*trainer)->version}};
    else if (trainer)
      j["trainerError"] = trainer->error();
    if (background && *background && !(*background)->ready)
      j["trainer"] = {{"building", true}, {"log", (*background)->log}};
    else if (background && !*background)
      j["trainerError"] = background->error();
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "Connected to " << e.description() << " in " << ms << " ms\n"
              << "  host key  " << hk.key.type << " " << hk.fingerprint
              << (hk.newly_recorded ? " (recorded in " + hk.recorded_in + ")" : " (known)") << "\n"
              << "  agent     ferry-agent " << info->version << " at " << rep.remote_path
              << (rep.installed ? " (installed now)" : "") << "\n"
              << "  root      " << info->root << "\n"
              << "  box       " << info->hostname << ", " << info->os << " " << info->arch << "\n";
    if (trainer && *trainer)
      std::cout << "  trainer   " << (*trainer)->path << ((*trainer)->built ? " (built now)" : " (ready)") << ": " << (*trainer)->version << "\n";
    if (background && *background && !(*background)->ready)
      std::cout << "  trainer   building ferry-train in the background on the box (log: " << (*background)->log
                << "); `ferry train` waits for it\n";
  }
  // A failed background start does not fail the connect: the link is fine, and ferry train says it again.
  if (background && !*background && !o.json) std::cerr << "ferry connect: the trainer: " << background->error() << "\n";
  if (trainer && !*trainer) {
    std::cerr << "ferry connect: " << trainer->error() << "\n";
    e.close();
    return exit_status::kFailed;
  }
  e.close();
  return exit_status::kOk;
}

}  // namespace

void add_connect_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<ConnectOptions>();
  auto* cmd = app.add_subcommand("connect", "Connect to the host (default: the project's), install ferry-agent if needed, check the link; "
                                 "for a project that trains, start ferry-train's build on the box in the background if missing or stale");
  cmd->add_option("host", o->host, "ssh config alias or user@host:port (default: ferry.json's host)");
  cmd->add_option("--root", o->root, "The agent's root on the box (default: the project's first mapping)");
  cmd->add_option("--timeout", o->timeout_s, "Seconds to wait for the whole connect")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print the result as JSON");
  auto* wait = cmd->add_flag("--build-trainer", o->build_trainer, "Also make sure ferry-train is on the box: build it there now if missing "
                                                     "and wait for it, with a progress bar");
  cmd->add_flag("--no-build-trainer", o->no_build_trainer, "Leave ferry-train alone (by default a project with training configs "
                                                           "starts its build on the box in the background, when missing or stale)")
      ->excludes(wait);
  cmd->fallthrough();  // -F and the other global options also work after the sub-command
  cmd->callback([&g, o] { g.exit_code = run_connect(g, *o); });
}

}  // namespace ferry::cli

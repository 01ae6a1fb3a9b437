// `ferry env` (the box interpreter's facts as a table: Python, platform, sys.path, packages,
// torch/CUDA) and `ferry env sync` (mirror its packages' Python sources into the local cache and
// point the project's .ferry/venv at them, so the editor completes and resolves what the box has).
#include <chrono>
#include <csignal>
#include <ctime>
#include <iostream>
#include <functional>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/relay_endpoint.hpp"
#include "helper/env/env_mirror.hpp"
#include "helper/env/env_probe.hpp"

namespace ferry::cli {

namespace {

struct EnvCliOptions {
  bool json = false;
  std::uint64_t cap = env::kDefaultMirrorCap;
  std::string local_python = "python3";
  bool no_venv = false;
};

// The project and its connected link, or the exit code after the message.
std::expected<std::pair<deploy::ProjectConfig, sync::ProjectEndpoint>, int> open_link(const GlobalOptions& g, const std::string& who) {
  auto project = cli_project_or_usage(g, who);
  if (!project) return std::unexpected(project.error());
  auto made = sync::make_project_endpoint(*project, cli_endpoint_options(g));
  if (!made) {
    std::cerr << who << ": " << made.error().message << "\n";
    return std::unexpected(2);
  }
  if (!connect_cli_endpoint(*made, who)) return std::unexpected(1);
  return std::pair{std::move(*project), std::move(*made)};
}

void print_info_table(const env::EnvInfo& i) {
  auto row = [](const std::string& k, const std::string& v) { std::cout << fmt::format("{:<14}{}\n", k, v); };
  row("interpreter", i.interpreter + (i.executable.empty() || i.executable == i.interpreter ? "" : " (" + i.executable + ")"));
  row("python", i.implementation + " " + i.python);
  row("platform", i.platform + " " + i.machine);
  row("torch", i.torch ? *i.torch : i.torch_error.empty() ? "not installed" : "does not import: " + i.torch_error);
  if (i.torch) {
    row("cuda", i.torch_cuda && !i.torch_cuda->empty() ? *i.torch_cuda : "none (a CPU build)");
    row("gpus", i.cuda_available ? std::to_string(i.cuda_devices) + " visible" : "none visible to torch");
  }
  std::cout << "sys.path:\n";
  for (const auto& p : i.sys_path) std::cout << fmt::format("  {:<7} {}\n", p.kind, p.path);
  std::cout << "packages (" << i.distributions.size() << "):\n";
  std::size_t width = 0;
  for (const auto& d : i.distributions) width = std::max(width, d.name.size());
  for (const auto& d : i.distributions) std::cout << fmt::format("  {:<{}}  {}\n", d.name, width, d.version);
}

// The probe through the project's live ferry (its env/info on the link it has up), when there is
// one; nullopt: ask on a link of this command's own.
std::optional<std::expected<env::EnvInfo, Error>> env_info_riding(const GlobalOptions& g) {
  auto project = find_cli_project(g);
  if (!project) return std::nullopt;  // open_link says why
  auto live = live_for(g, *project);
  if (!live) return std::nullopt;
  auto r = live->call("env/info", nlohmann::json{{"path", project->root.string()}, {"torch", true}});
  if (!r) return std::unexpected(Error(error_kind_of(r.error().code), r.error().message));
  auto info = env::env_info_from_json(*r);
  if (!info) return std::unexpected(Error(ErrorKind::agent_lost, "the live ferry's env/info: " + info.error()));
  return std::move(*info);
}

int run_env_info(const GlobalOptions& g, const EnvCliOptions& o) {
  std::expected<env::EnvInfo, Error> info;
  if (auto riding = env_info_riding(g)) {
    info = std::move(*riding);
  } else {
    auto opened = open_link(g, "ferry env");
    if (!opened) return opened.error();
    auto& [project, link] = *opened;
    info = env::probe_env(*link.endpoint, project.interpreter, true);
    link.endpoint->close();
  }
  if (!info) {
    std::cerr << "ferry env: " << info.error().message << "\n";
    return exit_status::exit_status_of(info.error().kind);
  }
  if (o.json) std::cout << env::to_json(*info).dump(2) << "\n";
  else print_info_table(*info);
  return exit_status::kOk;
}

struct EnvSyncDone {
  env::EnvSyncReport report;
  std::optional<std::string> venv;
  std::string venv_error;
};

// The mirror made by the project's live ferry (its env/sync, venv included), when there is one;
// nullopt: on a link of this command's own.
std::optional<std::expected<EnvSyncDone, Error>> env_sync_riding(const GlobalOptions& g, const EnvCliOptions& o) {
  auto project = find_cli_project(g);
  if (!project) return std::nullopt;
  auto live = live_for(g, *project);
  if (!live) return std::nullopt;
  std::function<void(const nlohmann::json&)> progress;
  if (!o.json)
    progress = [](const nlohmann::json& v) {
      if (v.value("kind", "") == "report" && !v.value("message", "").empty()) std::cerr << "ferry env sync: " << v["message"].get<std::string>() << "\n";
    };
  auto r = live->call("env/sync",
                      nlohmann::json{{"path", project->root.string()}, {"capBytes", o.cap}, {"venv", !o.no_venv}, {"localPython", o.local_python}},
                      progress, stop_on_ctrl_c());
  if (!r) return std::unexpected(Error(error_kind_of(r.error().code), r.error().message));
  EnvSyncDone done{env::EnvSyncReport::from_json(*r), std::nullopt, r->value("venvError", "")};
  if (r->contains("venvPython") && (*r)["venvPython"].is_string()) done.venv = (*r)["venvPython"].get<std::string>();
  return done;
}

std::expected<EnvSyncDone, Error> env_sync_alone(const GlobalOptions& g, const EnvCliOptions& o, int& exit_code) {
  auto opened = open_link(g, "ferry env sync");
  if (!opened) {
    exit_code = opened.error();
    return std::unexpected(Error(ErrorKind::invalid_input, ""));
  }
  auto& [project, link] = *opened;
  auto info = env::probe_env(*link.endpoint, project.interpreter, false);
  if (!info) return std::unexpected(info.error());
  env::EnvSyncOptions so;
  so.host = link.host;
  so.interpreter = project.interpreter;
  so.cap_bytes = o.cap;
  so.cancelled = stop_on_ctrl_c();
  if (!o.json) so.entry_started = [](const std::string& p) { std::cerr << "ferry env sync: " << p << "\n"; };
  auto report = env::sync_env(*link.endpoint, *info, so);
  link.endpoint->close();
  if (!report) return std::unexpected(report.error());
  EnvSyncDone done{std::move(*report), std::nullopt, ""};
  if (!o.no_venv)
    if (auto state = env::read_mirror_state(done.report.mirror)) {
      if (auto made = env::write_project_venv(project.root, *state, o.local_python)) done.venv = made->string();
      else done.venv_error = made.error();
    }
  return done;
}

void print_env_sync(const EnvSyncDone& d, const EnvCliOptions& o) {
  const auto& report = d.report;
  if (o.json) {
    auto j = report.to_json();
    j["venvPython"] = d.venv ? nlohmann::json(*d.venv) : nlohmann::json(nullptr);
    if (!d.venv_error.empty()) j["venvError"] = d.venv_error;
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "ferry env sync: " << report.one_line() << "\n";
  std::cout << "  mirror: " << report.mirror.string() << "\n";
  if (!report.left_out.empty()) {
    std::string names;
    for (std::size_t k = 0; k < report.left_out.size() && k < 5; ++k)
      names += fmt::format("{}{} ({:.1f} MiB)", k ? ", " : "", report.left_out[k].first, report.left_out[k].second / 1048576.0);
    std::cout << "  over the " << fmt::format("{:.0f} MiB", o.cap / 1048576.0) << " cap, left out: " << names
              << " (raise it with --cap BYTES)\n";
  }
  if (d.venv) std::cout << "  venv: " << *d.venv << " (select it as the project interpreter; `ferry ide vscode` does it for VS Code)\n";
  if (!d.venv_error.empty()) std::cerr << "ferry env sync: the venv: " << d.venv_error << "\n";
  for (const auto& e : report.errors) std::cerr << "  error: " << e << "\n";
}

int run_env_sync(const GlobalOptions& g, const EnvCliOptions& o) {
  int exit_code = 0;
  std::expected<EnvSyncDone, Error> done;
  if (auto riding = env_sync_riding(g, o)) done = std::move(*riding);
  else done = env_sync_alone(g, o, exit_code);
  if (exit_code) return exit_code;  // said already
  if (!done) {
    std::cerr << "ferry env sync: " << done.error().message << "\n";
    return exit_status::exit_status_of(done.error().kind);
  }
  print_env_sync(*done, o);
  if (done->report.cancelled) return 128 + SIGINT;
  return done->report.errors.empty() && done->venv_error.empty() ? 0 : 1;
}

}  // namespace

void add_env_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<EnvCliOptions>();
  auto* cmd = app.add_subcommand("env", "The box's Python environment: `ferry env` shows it, `ferry env sync` mirrors it for the editor");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->fallthrough();
  auto* sync_cmd = cmd->add_subcommand(
      "sync", "Mirror the box interpreter's package sources (.py, .pyi, metadata) locally and point .ferry/venv at them");
  sync_cmd->add_option("--cap", o->cap, "Most bytes the mirror may hold; the largest packages are left out past it")->capture_default_str();
  sync_cmd->add_option("--python", o->local_python, "The local python3 that makes .ferry/venv")->capture_default_str();
  sync_cmd->add_flag("--no-venv", o->no_venv, "Only mirror; leave .ferry/venv alone");
  sync_cmd->add_flag("--json", o->json, "Print the report as JSON");
  sync_cmd->fallthrough();
  sync_cmd->callback([&g, o] { g.exit_code = run_env_sync(g, *o); });
  cmd->callback([&g, o, sync_cmd] {
    if (sync_cmd->parsed()) return;
    g.exit_code = run_env_info(g, *o);
  });
}

}  // namespace ferry::cli

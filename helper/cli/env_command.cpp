// `ferry env` (the box interpreter's facts as a table: Python, platform, sys.path, packages,
// torch/CUDA) and `ferry env sync` (mirror its packages' Python sources into the local cache and
// point the project's .ferry/venv at them, so the editor completes and resolves what the box has).
#include <chrono>
#include <csignal>
#include <ctime>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
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
  auto project = find_cli_project(g);
  if (!project) {
    std::cerr << who << ": " << project.error() << "\n";
    return std::unexpected(2);
  }
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

int run_env_info(const GlobalOptions& g, const EnvCliOptions& o) {
  auto opened = open_link(g, "ferry env");
  if (!opened) return opened.error();
  auto& [project, link] = *opened;
  auto info = env::probe_env(*link.endpoint, project.interpreter, true);
  link.endpoint->close();
  if (!info) {
    std::cerr << "ferry env: " << info.error().message << "\n";
    return exit_status::exit_status_of(info.error().kind);
  }
  if (o.json) std::cout << env::to_json(*info).dump(2) << "\n";
  else print_info_table(*info);
  return exit_status::kOk;
}

int run_env_sync(const GlobalOptions& g, const EnvCliOptions& o) {
  auto opened = open_link(g, "ferry env sync");
  if (!opened) return opened.error();
  auto& [project, link] = *opened;
  auto info = env::probe_env(*link.endpoint, project.interpreter, false);
  if (!info) {
    std::cerr << "ferry env sync: " << info.error().message << "\n";
    return exit_status::exit_status_of(info.error().kind);
  }
  env::EnvSyncOptions so;
  so.host = link.host;
  so.interpreter = project.interpreter;
  so.cap_bytes = o.cap;
  so.cancelled = stop_on_ctrl_c();
  if (!o.json) so.entry_started = [](const std::string& p) { std::cerr << "ferry env sync: " << p << "\n"; };
  auto report = env::sync_env(*link.endpoint, *info, so);
  link.endpoint->close();
  if (!report) {
    std::cerr << "ferry env sync: " << report.error().message << "\n";
    return exit_status::exit_status_of(report.error().kind);
  }
  std::optional<std::string> venv;
  std::string venv_error;
  if (!o.no_venv) {
    if (auto state = env::read_mirror_state(report->mirror)) {
      if (auto made = env::write_project_venv(project.root, *state, o.local_python)) venv = made->string();
      else venv_error = made.error();
    }
  }
  if (o.json) {
    auto j = report->to_json();
    j["venvPython"] = venv ? nlohmann::json(*venv) : nlohmann::json(nullptr);
    if (!venv_error.empty()) j["venvError"] = venv_error;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "ferry env sync: " << report->one_line() << "\n";
    std::cout << "  mirror: " << report->mirror.string() << "\n";
    if (!report->left_out.empty()) {
      std::string names;
      for (std::size_t k = 0; k < report->left_out.size() && k < 5; ++k)
        names += fmt::format("{}{} ({:.1f} MiB)", k ? ", " : "", report->left_out[k].first, report->left_out[k].second / 1048576.0);
      std::cout << "  over the " << fmt::format("{:.0f} MiB", o.cap / 1048576.0) << " cap, left out: " << names
                << " (raise it with --cap BYTES)\n";
    }
    if (venv) std::cout << "  venv: " << *venv << " (select it as the project interpreter; `ferry ide vscode` does it for VS Code)\n";
    if (!venv_error.empty()) std::cerr << "ferry env sync: the venv: " << venv_error << "\n";
    for (const auto& e : report->errors) std::cerr << "  error: " << e << "\n";
  }
  if (report->cancelled) return 128 + SIGINT;
  return report->errors.empty() && venv_error.empty() ? 0 : 1;
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
  sync_cmd->callback([&g, o] { exit_code() = run_env_sync(g, *o); });
  cmd->callback([&g, o, sync_cmd] {
    if (sync_cmd->parsed()) return;
    exit_code() = run_env_info(g, *o);
  });
}

}  // namespace ferry::cli

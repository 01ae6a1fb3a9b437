// `ferry trust-project [DIR]`: records that the person trusts a project's ferry.json (what it makes
// ferry do is printed first), or with --status/--revoke/--list/--folder reads and edits those
// decisions. They live in the user's config directory (docs/security.md), never in the project.
#include <iostream>

#include <CLI/CLI.hpp>

#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/deploy/project_trust.hpp"

namespace ferry::cli {
namespace {

namespace fs = std::filesystem;

struct TrustProjectOptions {
  std::string dir;
  bool status = false;
  bool revoke = false;
  bool list = false;
  bool folder = false;
};

void print_summary(const deploy::ProjectConfig& project) {
  const auto summary = deploy::trust_summary(project);
  std::cout << "Its ferry.json makes ferry:\n";
  for (const auto& a : summary.actions) std::cout << "  - " << a << "\n";
  for (const auto& w : summary.warnings) std::cout << "  ! " << w << "\n";
}

int list_decisions(const deploy::TrustStore& store) {
  std::cout << "Trust decisions in " << store.dir().string() << "\n";
  for (const auto& f : store.trusted_folders()) std::cout << "  folder   " << f.string() << "  (every project below)\n";
  for (const auto& p : store.trusted_projects()) std::cout << "  project  " << p.string() << "\n";
  return exit_status::kOk;
}

int show_status(const deploy::TrustStore& store, const deploy::ProjectConfig& project) {
  const auto status = store.check(project);
  if (status.trusted()) {
    std::cout << project.root.string() << ": trusted" << (status.via == "project" ? "" : " (folder " + status.via + ")") << "\n";
    return exit_status::kOk;
  }
  std::cout << project.root.string() << ": " << deploy::untrusted_message(project, status) << "\n";
  print_summary(project);
  return exit_status::kFailed;
}

int run_trust_project(GlobalOptions g, const TrustProjectOptions& o) {
  const std::string who = "ferry trust-project";
  deploy::TrustStore store;
  if (o.list) return list_decisions(store);
  if (!o.dir.empty()) g.project_dir = o.dir;
  std::error_code ec;
  if (o.folder) {
    const fs::path folder = fs::absolute(g.project_dir ? fs::path(*g.project_dir) : fs::current_path(ec), ec);
    if (auto r = store.trust_folder(folder); !r) {
      std::cerr << who << ": " << r.error() << "\n";
      return exit_status::kUsage;
    }
    std::cout << "Trusted every project under " << folder.string() << " (now and later; ferry trust-project --list)\n";
    return exit_status::kOk;
  }
  if (o.revoke) {
    const fs::path root = fs::absolute(g.project_dir ? fs::path(*g.project_dir) : fs::current_path(ec), ec);
    auto file = deploy::find_project_file(root);
    auto r = store.revoke(file ? file->parent_path() : root);
    if (!r) {
      std::cerr << who << ": " << r.error() << "\n";
      return exit_status::kFailed;
    }
    std::cout << (*r ? "Forgot " : "Nothing recorded for ") << (file ? file->parent_path() : root).string() << "\n";
    return exit_status::kOk;
  }
  auto project = load_cli_project(g);
  if (!project) {
    std::cerr << who << ": " << project.error() << "\n";
    return exit_status::kUsage;
  }
  if (o.status) return show_status(store, *project);
  if (auto r = store.trust(*project); !r) {
    std::cerr << who << ": " << r.error() << "\n";
    return exit_status::kFailed;
  }
  std::cout << "Trusted " << project->root.string() << " (until a field that matters in its ferry.json changes)\n";
  print_summary(*project);
  return exit_status::kOk;
}

}  // namespace

void add_trust_project_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<TrustProjectOptions>();
  auto* cmd = app.add_subcommand("trust-project", "Trust a project's ferry.json: let it make ferry connect, run and open tunnels");
  cmd->add_option("dir", o->dir, "The project (default: --project, else walk up from the cwd to ferry.json)");
  cmd->add_flag("--status", o->status, "Say whether it is trusted and what its ferry.json would do (exit 1 when not)");
  cmd->add_flag("--revoke", o->revoke, "Forget the decision: ferry asks again before using the project");
  cmd->add_flag("--list", o->list, "List the trusted projects and folders");
  cmd->add_flag("--folder", o->folder, "Trust every project under DIR, whatever its ferry.json says (like a trusted parent folder)");
  cmd->footer("Until a project is trusted, ferry serve and the commands that connect do nothing for it: no SSH login,\n"
              "no command on this machine or the box, no tunnel, no autostop. A change to its host, sshConfig (or\n"
              "that file), mappings, interpreter, trainer, env, tunnels, autostop or launch entries asks again.\n"
              "Decisions live in $XDG_CONFIG_HOME/ferry/trust (~/.config/ferry/trust), never in the repository.");
  cmd->fallthrough();
  cmd->callback([&g, o] { g.exit_code = run_trust_project(g, *o); });
}

}  // namespace ferry::cli

// `ferry ide pycharm` and `ferry ide vscode`: write the IDE's files for this project (run
// configurations, debug server, File Watchers and the LSP4IJ template; VS Code tasks and launch
// configurations) from ferry.json's launch list, merged into what is there, and say what changed.
// The files themselves are helper/ide's pure functions; this reads, connects and writes.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>

#include "common/executables.hpp"
#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/deploy/project_config.hpp"
#include "helper/ide/ide_plan.hpp"
#include "helper/env/env_mirror.hpp"
#include "helper/ide/pycharm_files.hpp"
#include "helper/ide/settings_key.hpp"
#include "helper/ide/vscode_files.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/sync/atomic_file.hpp"
#include "helper/sync/mapping_target.hpp"

namespace ferry::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kUsage = exit_status::kUsage;
constexpr int kFailure = exit_status::kFailed;

struct IdeCliOptions {
  bool offline = false;
  int port = ide::kDefaultPycharmDebugPort;
  std::string ferry;  // the command the IDE runs; default: see ferry_command()
};

// How the IDE should start ferry. "ferry" when the `ferry` on PATH is this very binary: the
// files then work on any machine with ferry installed, so .run/ and .vscode/ can be committed
// (the JetBrains IDEs and VS Code start commands with the login shell's PATH). Otherwise (a
// build tree, a copy not on PATH) this binary's absolute path, which works here whatever PATH
// the IDE has; run `ferry ide` again if it moves. --ferry overrides both.
std::string ferry_command() {
  std::error_code ec;
  const auto exe = platform::executable_path();
  if (!exe) return "ferry";
  const fs::path self = fs::canonical(*exe, ec);
  if (ec) return "ferry";
  // The first ferry on PATH is the one a shell runs: this one or not.
  if (auto on_path = platform::find_on_path("ferry")) return fs::canonical(*on_path, ec) == self && !ec ? "ferry" : self.string();
  return self.string();
}

std::expected<deploy::ProjectConfig, int> load_config(const GlobalOptions& g, const std::string& who) {
  std::error_code ec;
  const fs::path start = g.project_dir ? fs::path(*g.project_dir) : fs::current_path(ec);
  auto file = deploy::find_project_file(start);
  if (!file) {
    std::cerr << who << ": no ferry.json in " << start.string() << " or above (run ferry init)\n";
    return std::unexpected(kUsage);
  }
  auto project = deploy::load_project(*file);
  if (!project) {
    std::cerr << who << ": " << project.error().to_string() << "\n";
    return std::unexpected(kUsage);
  }
  if (auto admitted = admit_cli_project(g, *project); !admitted) {
    std::cerr << who << ": " << admitted.error() << "\n";
    return std::unexpected(kUsage);
  }
  return std::move(*project);
}

// The first mapping's absolute root on the host. The local host's is known here (the sandbox);
// an SSH host is asked, by connecting as every command does (PyCharm and debugpy need absolute
// remote paths, and only the box knows what its "~" is).
std::expected<std::string, std::string> first_remote_root(const GlobalOptions& g, const deploy::ProjectConfig& project) {
  const deploy::Mapping& m = project.mappings.front();
  const sync::SyncTarget target = sync::mapping_target(project, m);
  if (project.host == "local") {
    const remote::LocalEndpointOptions o = sync::local_endpoint_options(project, m);
    std::error_code ec;
    const fs::path root = fs::weakly_canonical(o.root.empty() ? remote::default_sandbox_root(project.name) : o.root, ec);
    return (root / target.remote_base).lexically_normal().string();
  }
  auto t = remote::make_ssh_target("", "", g.ssh_config, &project);
  if (!t) return std::unexpected(t.error());
  remote::SshEndpoint endpoint(endpoint_options(*t));
  auto info = endpoint.connect();
  if (!info) return std::unexpected("cannot reach " + endpoint.description() + ": " + info.error().message);
  endpoint.close();
  return (fs::path(info->root) / target.remote_base).lexically_normal().generic_string();  // a box path: / on every laptop
}

std::expected<std::vector<debug::PathMapping>, int> path_mappings(const GlobalOptions& g, const deploy::ProjectConfig& project,
                                                                  bool offline, const std::string& who) {
  if (offline && project.host != "local") {
    auto mappings = ide::configured_path_mappings(project);
    for (const auto& m : mappings)
      if (m.remote_root.starts_with("~"))
        std::cerr << who << ": warning: remote root " << m.remote_root << " is written with its '~' (--offline): PyCharm "
                  << "and debugpy need an absolute path there; run without --offline when " << project.host
                  << " is reachable, or edit the path mapping\n";
    return mappings;
  }
  auto root = first_remote_root(g, project);
  auto mappings = root ? debug::resolve_path_mappings(project, *root) : std::unexpected(root.error());
  if (!mappings) {
    std::cerr << who << ": " << mappings.error() << " (--offline writes the files without asking the host)\n";
    return std::unexpected(kFailure);
  }
  return *mappings;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The files a plan may touch, as they are now.
ide::ExistingFiles existing_files(const fs::path& root) {
  ide::ExistingFiles out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root / ".run", ec))
    if (e.is_regular_file(ec) && e.path().filename().string().ends_with(".run.xml"))
      out[".run/" + e.path().filename().string()] = read_text(e.path());
  for (const std::string& rel : {std::string(ide::kWatcherTasksPath), std::string(ide::kLsp4ijTemplateDir) + "/template.json",
                                std::string(ide::kTasksPath), std::string(ide::kLaunchPath)})
    if (fs::is_regular_file(root / rel, ec)) out[rel] = read_text(root / rel);
  return out;
}

// Writes what changed and prints every file's fate; false when a file could not be written or merged.
bool apply(const fs::path& root, const ide::IdePlan& plan, const std::string& who) {
  bool ok = true, changed = false;
  for (const auto& f : plan.files) {
    if (f.change == ide::Change::failed) {
      std::cerr << who << ": " << f.path << ": " << f.error << "\n";
      ok = false;
      continue;
    }
    if (f.change != ide::Change::unchanged) {
      if (auto w = sync::write_project_file_atomically(root / f.path, f.text); !w) {
        std::cerr << who << ": " << w.error() << "\n";
        ok = false;
        continue;
      }
      changed = true;
    }
    const char* word = f.change == ide::Change::created ? "created  " : f.change == ide::Change::updated ? "updated  " : "unchanged";
    std::cout << "  " << word << " " << f.path << "\n";
  }
  for (const auto& n : plan.notes) std::cout << "  note: " << n << "\n";
  if (ok && !changed) std::cout << "Nothing changed: the files already say what ferry.json says.\n";
  return ok;
}

// VS Code's one merged key: python.defaultInterpreterPath -> .ferry/venv, once `ferry env sync`
// made it (an interpreter that is not there would only confuse the Python extension).
bool wire_vscode_interpreter(const fs::path& root, const std::string& who) {
  if (!fs::exists(env::project_venv_python(root))) {
    std::cout << "  note: no .ferry/venv yet: run `ferry env sync` (the box's packages for completion and go-to-definition),\n"
              << "        then `ferry ide vscode` again to point VS Code's Python extension at it\n";
    return true;
  }
  const fs::path file = root / ".vscode" / "settings.json";
  std::string old;
  if (std::ifstream in(file); in) old.assign(std::istreambuf_iterator<char>(in), {});
  auto merged = ide::merge_settings_key(old, std::string(ide::kInterpreterKey), std::string(ide::kVenvInterpreter));
  if (!merged) {
    std::cerr << who << ": .vscode/settings.json: " << merged.error() << "\n";
    return false;
  }
  if (merged->changed) {
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    if (auto w = sync::write_project_file_atomically(file, merged->text); !w) {
      std::cerr << who << ": " << w.error() << "\n";
      return false;
    }
  }
  std::cout << "  " << (merged->changed ? (old.empty() ? "created  " : "updated  ") : "unchanged") << " .vscode/settings.json ("
            << ide::kInterpreterKey << ": .ferry/venv, the box's packages)\n";
  if (!merged->kept_value.empty())
    std::cout << "  note: " << ide::kInterpreterKey << " is already " << merged->kept_value
              << " there; kept. Set it to " << ide::kVenvInterpreter << " for the box's packages.\n";
  return true;
}

void print_pycharm_steps(const deploy::ProjectConfig& project, const IdeCliOptions& o) {
  std::cout << "\nNext, in PyCharm or CLion (details: docs/ide.md):\n"
            << "  1. Settings > Plugins > Marketplace: install LSP4IJ (free, Community editions too).\n"
            << "  2. Settings > Languages & Frameworks > Language Servers > + (New Language Server) > Template:\n"
            << "     Import template..., and in the folder chooser paste this path into its path field (it hides\n"
            << "     folders whose names start with a dot, such as .ferry):\n"
            << "       " << (project.root / ide::kLsp4ijTemplateDir).string() << "\n"
            << "     (ferry serve then syncs on save and shows ferry's code lenses and diagnostics). Once per machine:\n"
            << "     LSP4IJ keeps servers for every project. Never import it again (that adds a second server): to\n"
            << "     change the command, edit Settings > Languages & Frameworks > Language Servers > ferry > Server.\n"            << "  3. Run: the configurations \"ferry: NAME\" (from .run/) run ferry run/debug/train --launch NAME.\n"
            << "  4. Debug, PyCharm Professional only: start \"" << ide::kDebugServerName << "\" (port " << o.port
            << ") first, then a debug entry's \"ferry: NAME\";\n"
            << "     the script connects with the settrace line that ferry debug --pycharm prints. PyCharm Community\n"
            << "     and CLion have no Python Debug Server: they list " << ide::kDebugServerPath << " as an unknown\n"
            << "     configuration (delete it there); debug with `ferry debug` and any DAP client (VS Code) instead.\n"
            << "  5. Without LSP4IJ, the File Watchers \"ferry sync (py|json|yaml)\" push each saved file (PyCharm\n"
            << "     Professional; CLion needs the File Watchers plugin). With LSP4IJ, switch them off in Settings > Tools >\n"
            << "     File Watchers: ferry ide keeps them off. Reopen the project if it was open while they were written.\n"
            << "  6. Completion and go-to-definition for the box's packages: run `ferry env sync`, then Settings > Project >\n"
            << "     Python Interpreter > Add Interpreter > Add Local Interpreter > Virtualenv > Existing, and pick\n"
            << "     " << env::project_venv_python(project.root).string()
            << (fs::exists(env::project_venv_python(project.root)) ? "" : " (not made yet)") << "\n";
}

void print_vscode_steps() {
  std::cout << "\nIn VS Code: Terminal > Run Task... > \"ferry: NAME\" runs a launch entry; Run and Debug > \"ferry: NAME\"\n"
            << "starts a debug entry's task and attaches once debugpy listens on the box (details: docs/ide.md).\n";
}

int run_ide(const GlobalOptions& g, const IdeCliOptions& o, ide::Ide which) {
  const std::string who = which == ide::Ide::pycharm ? "ferry ide pycharm" : "ferry ide vscode";
  auto project = load_config(g, who);
  if (!project) return project.error();
  ide::IdeInputs in;
  in.ferry = o.ferry.empty() ? ferry_command() : o.ferry;
  in.pycharm_port = o.port;
  // VS Code needs the mappings only for debug entries' attach configurations.
  const bool needs_mappings = which == ide::Ide::pycharm ||
                              std::any_of(project->launch.begin(), project->launch.end(), [](const auto& e) { return e.kind == "debug"; });
  if (needs_mappings) {
    auto mappings = path_mappings(g, *project, o.offline, who);
    if (!mappings) return mappings.error();
    in.mappings = std::move(*mappings);
  }
  in.project = std::move(*project);
  if (in.project.launch.empty())
    std::cerr << who << ": ferry.json has no launch entries: no run " << (which == ide::Ide::pycharm ? "configurations" : "tasks")
              << " to write (docs/config.md#launch)\n";
  const ide::ExistingFiles existing = existing_files(in.project.root);
  const ide::IdePlan plan = which == ide::Ide::pycharm ? ide::plan_pycharm(in, existing) : ide::plan_vscode(in, existing);
  std::cout << "In " << in.project.root.string() << ":\n";
  bool ok = apply(in.project.root, plan, who);
  if (which == ide::Ide::vscode) ok = wire_vscode_interpreter(in.project.root, who) && ok;
  if (which == ide::Ide::pycharm) print_pycharm_steps(in.project, o);
  else if (!plan.files.empty()) print_vscode_steps();
  return ok ? exit_status::kOk : kFailure;
}

}  // namespace

void add_ide_command(CLI::App& app, GlobalOptions& g) {
  auto* ide = app.add_subcommand("ide", "Write IDE files for ferry.json's launch entries: ferry ide pycharm | ferry ide vscode");
  ide->require_subcommand(1);
  auto po = std::make_shared<IdeCliOptions>();
  auto* pycharm = ide->add_subcommand(
      "pycharm", "PyCharm/CLion: a .run/ configuration per launch entry, the Python Debug Server, File Watchers "
                 "(sync on save without LSP4IJ) and the LSP4IJ template to import; merged with what is there");
  auto* vscode = ide->add_subcommand(
      "vscode", "VS Code: a task per launch entry in .vscode/tasks.json, for debug entries an attach "
                "configuration in .vscode/launch.json that starts it, and python.defaultInterpreterPath -> .ferry/venv in "
                ".vscode/settings.json once ferry env sync made it; merged, comments kept");
  auto vo = std::make_shared<IdeCliOptions>();
  for (auto [cmd, o] : {std::pair{pycharm, po}, std::pair{vscode, vo}}) {
    cmd->add_flag("--offline", o->offline,
                  "Do not connect to learn the host's absolute remote root: \"~/...\" roots are written as they are (warned)");
    cmd->add_option("--ferry", o->ferry,
                    "The ferry command the IDE runs (default: \"ferry\" when the ferry on PATH is this one, else this "
                    "binary's absolute path)");
  }
  pycharm->add_option("--port", po->port, "The Python Debug Server's port (ferry debug --pycharm PORT)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
  pycharm->callback([&g, po] { g.exit_code = run_ide(g, *po, ide::Ide::pycharm); });
  vscode->callback([&g, vo] { g.exit_code = run_ide(g, *vo, ide::Ide::vscode); });
}

}  // namespace ferry::cli

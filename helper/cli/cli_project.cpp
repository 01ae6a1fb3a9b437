// The CLI's side of the one project prologue (helper/sync/project_endpoint.hpp): find and load
// ferry.json, admit it only when its user trusts it, and the endpoint options every command shares (-F, the log level, the terminal's
// passphrase prompt).
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "helper/cli/commands.hpp"
#include "helper/run/slurm_allocation.hpp"
#include "helper/deploy/project_trust.hpp"
#include "helper/ssh/passphrase_prompt.hpp"
#include "protocol/link_state.hpp"

namespace ferry::cli {

namespace fs = std::filesystem;

std::expected<deploy::ProjectConfig, std::string> load_cli_project(const GlobalOptions& g,
                                                                   const std::optional<fs::path>& start) {
  std::error_code ec;
  fs::path from = g.project_dir ? fs::path(*g.project_dir) : start ? *start : fs::current_path(ec);
  auto file = deploy::find_project_file(from);
  if (!file) return std::unexpected("no ferry.json in " + from.string() + " or above (run ferry init)");
  auto project = deploy::load_project(*file);
  if (!project) return std::unexpected(project.error().to_string());
  return std::move(*project);
}

std::expected<deploy::ProjectConfig, std::string> find_cli_project(const GlobalOptions& g,
                                                                   const std::optional<fs::path>& start) {
  auto project = load_cli_project(g, start);
  if (!project) return project;
  if (auto admitted = admit_cli_project(g, *project); !admitted) return std::unexpected(admitted.error());
  return project;
}

std::expected<deploy::ProjectConfig, int> cli_project_or_usage(const GlobalOptions& g, const std::string& who) {
  auto project = find_cli_project(g);
  if (!project) {
    std::cerr << who << ": " << project.error() << "\n";
    return std::unexpected(2);
  }
  return std::move(*project);
}

namespace {

// The question on the terminal; true for "y" or "yes".
bool ask_on_terminal(const deploy::ProjectConfig& project, const deploy::TrustStatus& status) {
  std::cerr << "ferry: " << deploy::trust_question(project, status) << "\nTrust " << project.root.string() << "? [y/N] "
            << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return answer == "y" || answer == "Y" || answer == "yes" || answer == "Yes";
}

// The root admit_cli_project let in (a command loads one ferry.json).
std::optional<fs::path>& admitted_root() {
  static std::optional<fs::path> root;
  return root;
}

}  // namespace

bool admitted_in_this_process(const deploy::ProjectConfig& project) { return admitted_root() == project.root; }

std::expected<void, std::string> admit_cli_project(const GlobalOptions& g, const deploy::ProjectConfig& project) {
  deploy::TrustStore store;
  auto status = store.check(project);
  if (status.trusted()) {
    admitted_root() = project.root;
    return {};
  }
  const bool terminal = ::isatty(STDIN_FILENO) && ::isatty(STDERR_FILENO);
  if (g.trust) {
    const auto summary = deploy::trust_summary(project);
    std::cerr << "ferry: trusting " << project.root.string() << " (--trust)\n";
    for (const auto& w : summary.warnings) std::cerr << "ferry:   ! " << w << "\n";
  } else if (!terminal || !ask_on_terminal(project, status)) {
    return std::unexpected(deploy::untrusted_message(project, status) + (terminal ? "" : "; or pass --trust"));
  }
  if (auto recorded = store.trust(project); !recorded) return std::unexpected("cannot record trust: " + recorded.error());
  admitted_root() = project.root;
  return {};
}

sync::ProjectEndpointOptions cli_endpoint_options(const GlobalOptions& g) {
  sync::ProjectEndpointOptions o;
  o.ssh_config = g.ssh_config;
  if (g.log_level != "warn") o.agent_args = {"--log-level", g.log_level};
  o.passphrase = ssh::terminal_passphrase_provider();
  o.reconnect = false;
  o.on_state = [](const remote::HostState& s) {
    if (s.state == protocol::LinkState::connecting) std::cerr << "ferry: connecting to " << s.message << "\n";
  };
  return o;
}

std::function<void(const std::string&)> waiting_note(const std::string& who) {
  return [who](const std::string& holder) {
    std::cerr << who << ": waiting for " << holder << ", which is syncing this project"
              << (holder.starts_with("ferry serve") ? " for your editor" : "") << "; going on when it is done\n";
  };
}

bool connect_cli_endpoint(sync::ProjectEndpoint& link, const std::string& who) {
  auto info = sync::connect_project_endpoint(link);
  if (info) return true;
  std::cerr << cannot_reach(who, link.endpoint->description(), info.error()) << "\n";
  return false;
}

std::expected<std::unique_ptr<remote::JobEndpoint>, std::string> allocation_endpoint(remote::Endpoint& login,
                                                                                     const deploy::ProjectConfig& project) {
  auto* ssh = dynamic_cast<remote::SshEndpoint*>(&login);
  if (!project.slurm || !ssh) return nullptr;
  auto job = run::running_allocation(login, project);
  if (!job) return std::unexpected("cannot ask Slurm for this project's allocation: " + job.error().message);
  if (!*job) return nullptr;
  std::cerr << "ferry: into " << run::describe_allocation(**job) << "\n";
  auto e = run::open_allocation_endpoint(*ssh, project, **job);
  if (!e) return std::unexpected(e.error().message);
  return std::move(*e);
}

}  // namespace ferry::cli

// The CLI's side of the one project prologue (helper/sync/project_endpoint.hpp): find and load
// ferry.json, and the endpoint options every command shares (-F, the log level, the terminal's
// passphrase prompt).
#include <filesystem>
#include <iostream>

#include "helper/cli/commands.hpp"
#include "helper/ssh/passphrase_prompt.hpp"
#include "protocol/link_state.hpp"

namespace ferry::cli {

namespace fs = std::filesystem;

std::expected<deploy::ProjectConfig, std::string> find_cli_project(const GlobalOptions& g,
                                                                   const std::optional<fs::path>& start) {
  std::error_code ec;
  fs::path from = g.project_dir ? fs::path(*g.project_dir) : start ? *start : fs::current_path(ec);
  auto file = deploy::find_project_file(from);
  if (!file) return std::unexpected("no ferry.json in " + from.string() + " or above (run ferry init)");
  auto project = deploy::load_project(*file);
  if (!project) return std::unexpected(project.error().to_string());
  return std::move(*project);
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

}  // namespace ferry::cli

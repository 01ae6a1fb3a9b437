// How an SSH host named by the user (CLI argument, -F) and the project (ferry.json host, first
// mapping, sshConfig) becomes SshEndpointOptions: the one place `ferry connect/doctor/sync/trust`
// and `ferry serve`'s host/connect and doctor/run agree on it.
#pragma once

#include <expected>
#include <optional>
#include <string>

#include "helper/deploy/project_config.hpp"
#include "helper/remote/ssh_endpoint.hpp"

namespace ferry::remote {

struct SshTarget {
  std::string host;  // ssh config alias or user@host:port
  std::string root;  // the agent's root on the box
  std::optional<std::string> ssh_config;
  std::string interpreter = "python3";
  std::string project_name;
};

// What was given explicitly wins; `project` (may be null) fills in the rest. Fails when no host is
// known or the host is "local" (no SSH link to make).
std::expected<SshTarget, std::string> make_ssh_target(std::string host, std::string root,
                                                      std::optional<std::string> ssh_config,
                                                      const deploy::ProjectConfig* project);

// host, ssh config and root set; the caller adds its own passphrase provider, on_state and
// reconnect policy.
SshEndpointOptions ssh_endpoint_options(const SshTarget& target);

}  // namespace ferry::remote

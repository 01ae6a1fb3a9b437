// The one prologue of every command that talks to a project's host, for the CLI and `ferry serve`
// alike: ferry.json -> an endpoint (the local sandbox agent for host "local", ferry-agent over SSH
// otherwise, rooted at the first mapping), every mapping's sync target over it, and once
// connected the first mapping's root on the box.
// Errors use one code per cause: a host ferry cannot resolve into an SSH target is
// kProjectInvalid (-32098), a host it cannot reach kAgentUnavailable (-32097).
#pragma once

#include <chrono>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "helper/deploy/project_config.hpp"
#include "helper/remote/endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/sync/sync_engine.hpp"

namespace ferry::sync {

struct ProjectEndpointOptions {
  std::optional<std::string> ssh_config;  // -F FILE: wins over ferry.json's sshConfig
  std::vector<std::string> agent_args;    // the local agent's extra arguments (--log-level)
  // SSH only.
  ssh::PassphraseProvider passphrase;
  std::function<void(const remote::HostState&)> on_state;
  bool reconnect = true;
  bool trust_unknown = false;              // record an unknown host key, if it is this one:
  std::optional<std::string> expect_fingerprint;
};

struct ProjectEndpoint {
  std::unique_ptr<remote::Endpoint> endpoint;
  SyncTarget target;         // the first mapping, with the project's excludes and protect rules
  std::vector<SyncTarget> targets;  // every mapping, in ferry.json's order ([0] is `target`)
  std::string host;          // "local", or the SSH target as ferry resolved it
  bool ssh = false;
  std::string mapping_root;  // set once connected: where the first mapping lies on the box
};

// The endpoint, not yet connected (`ferry sync` walks the tree while it connects).
std::expected<ProjectEndpoint, protocol::ResponseError> make_project_endpoint(const deploy::ProjectConfig& project,
                                                                             const ProjectEndpointOptions& options);

// Connects `link` and fills in mapping_root.
std::expected<remote::AgentInfo, protocol::ResponseError> connect_project_endpoint(
    ProjectEndpoint& link, std::chrono::milliseconds timeout = remote::kDefaultHandshakeTimeout);

// make_project_endpoint, then connect_project_endpoint.
std::expected<ProjectEndpoint, protocol::ResponseError> open_project_endpoint(
    const deploy::ProjectConfig& project, const ProjectEndpointOptions& options,
    std::chrono::milliseconds timeout = remote::kDefaultHandshakeTimeout);

// The agent's root joined with the mapping's place below it, without a trailing slash.
std::string mapping_root(const remote::AgentInfo& info, const SyncTarget& target);

}  // namespace ferry::sync

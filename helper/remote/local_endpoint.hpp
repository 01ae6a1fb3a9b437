// LocalEndpoint: ferry-agent as a subprocess on this machine, rooted in a sandbox directory.
// It is the `local` host of ferry.json (no SSH, no GPU needed) and the test double for
// SshEndpoint, since both run the very same agent behind the same Endpoint interface.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "helper/remote/agent_link.hpp"
#include "helper/remote/child_process.hpp"
#include "helper/remote/endpoint.hpp"
#include "helper/remote/tcp_relay.hpp"

namespace ferry::remote {

struct LocalEndpointOptions {
  std::filesystem::path agent;     // ferry-agent (or a wrapper); empty: find_agent_binary()
  std::filesystem::path root;      // the agent's root; empty: default_sandbox_root(project_name)
  std::string project_name = "default";
  std::vector<std::string> agent_args;  // appended after --root DIR (e.g. --log-level debug)
};


// $XDG_CACHE_HOME/ferry/local/<name>, else ~/.cache/ferry/local/<name>.
std::filesystem::path default_sandbox_root(std::string_view project_name);

class LocalEndpoint final : public Endpoint {
 public:
  explicit LocalEndpoint(LocalEndpointOptions options);
  ~LocalEndpoint() override;

  std::expected<AgentInfo, ResponseError> connect(std::chrono::milliseconds timeout = kDefaultHandshakeTimeout) override;
  std::expected<json, ResponseError> call(std::string_view method, json params,
                                          std::chrono::milliseconds timeout = kDefaultCallTimeout) override;
  std::expected<void, ResponseError> notify(std::string_view method, json params) override;
  const AgentInfo& info() const override { return info_; }
  bool connected() const override { return link_ && link_->alive(); }
  void close() override;
  std::string description() const override;

  // Tunnels are loopback TCP relays here: the "remote" side is this machine (a reverse tunnel
  // listens on 127.0.0.1:remotePort and relays to localPort).
  std::expected<ForwardInfo, ResponseError> open_forward(const ForwardSpec& spec) override;
  std::expected<void, ResponseError> close_forward(int id) override;
  std::vector<ForwardInfo> list_forwards() const override;

  // For tests and diagnostics.
  pid_t child_pid() const { return child_ ? child_->pid() : -1; }
  std::size_t pending_calls() const { return link_ ? link_->pending_calls() : 0; }
  // The child's wait status once close() (or its death) reaped it.
  std::optional<int> exit_status() const { return exit_status_; }
  const std::filesystem::path& root() const { return options_.root; }

 private:
  // graceful: agent/shutdown, EOF, a grace period, then SIGKILL; else SIGKILL at once.
  void stop(bool graceful);
  LocalEndpointOptions options_;
  std::unique_ptr<ChildProcess> child_;
  std::unique_ptr<AgentLink> link_;
  AgentInfo info_;
  std::optional<int> exit_status_;
  mutable std::mutex forwards_mutex_;
  std::map<int, std::pair<ForwardInfo, std::unique_ptr<TcpRelay>>> forwards_;
  int next_forward_id_ = 1;
};

}  // namespace ferry::remote

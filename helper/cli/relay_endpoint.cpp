// RelayEndpoint (relay_endpoint.hpp).
#include "helper/cli/relay_endpoint.hpp"

#include <iostream>

#include "helper/cli/exit_codes.hpp"
#include "helper/deploy/project_trust.hpp"
#include "helper/server/sync_result.hpp"
#include "protocol/json_binary.hpp"

namespace ferry::cli {

using remote::json;
using remote::ResponseError;

namespace {

// link/forward's answer (tunnel/open's TunnelInfo) as the endpoint's ForwardInfo.
remote::ForwardInfo forward_info(const json& j, const remote::ForwardSpec& spec) {
  remote::ForwardInfo f;
  f.id = j.value("id", 0);
  f.spec = spec;
  f.bound_port = spec.kind == remote::ForwardKind::kLocal ? j.value("localPort", 0) : j.value("remotePort", 0);
  f.state = j.value("state", "") == "active" ? protocol::ForwardState::active : protocol::ForwardState::waiting;
  f.error = j.value("error", "");
  f.accepted = j.value("accepted", std::uint64_t{0});
  f.live = j.value("live", std::uint64_t{0});
  return f;
}

}  // namespace

RelayEndpoint::RelayEndpoint(std::unique_ptr<LiveServer> live) : live_(std::move(live)) {
  const json a = live_->hello().value("agent", json::object());
  info_.protocol_version = a.value("protocolVersion", 0);
  info_.version = a.value("version", "");
  info_.pid = a.value("pid", 0LL);
  info_.root = a.value("root", "");
  info_.os = a.value("os", "");
  info_.arch = a.value("arch", "");
  info_.hostname = a.value("hostname", "");
  live_->client().on_notification([this, deliver = fanout_handler()](const std::string& method, const json& params) {
    if (method == "agent/notification") {
      deliver(protocol::Notification{params.value("method", ""), protocol::text_as_binary(params.value("params", json::object()))});
    } else if (method == "link/state") {
      const auto state = remote::host_state_from_json(params);
      std::function<void(const remote::HostState&)> handler;
      {
        std::lock_guard lock(mutex_);
        link_up_ = state.state == protocol::LinkState::connected;
        handler = state_handler_;
      }
      if (handler) handler(state);
    }
  });
}

// The connection goes first: its reader thread, which calls into this, is joined.
RelayEndpoint::~RelayEndpoint() { live_.reset(); }

std::expected<remote::AgentInfo, ResponseError> RelayEndpoint::connect(std::chrono::milliseconds) { return info_; }

std::expected<json, ResponseError> RelayEndpoint::call(std::string_view method, json params, std::chrono::milliseconds) {
  auto r = live_->call("agent/call", json{{"method", std::string(method)}, {"params", protocol::binary_as_text(params)}});
  if (!r) return std::unexpected(std::move(r.error()));
  return protocol::text_as_binary(*r);
}

std::expected<void, ResponseError> RelayEndpoint::notify(std::string_view method, json) {
  return std::unexpected(ResponseError{protocol::error_code::kMethodNotFound,
                                       std::string(method) + ": a command riding the live ferry sends no notifications", {}});
}

bool RelayEndpoint::connected() const {
  std::lock_guard lock(mutex_);
  return !closed_ && link_up_ && !live_->client().closed();
}

std::expected<sync::SyncSummary, ferry::Error> RelayEndpoint::push_project(const std::filesystem::path& root) {
  auto answer = live_->call("sync/push", json{{"path", root.string()}, {"delete", "owned"}});
  if (!answer) return std::unexpected(ferry::Error(ferry::ErrorKind::agent_lost, answer.error().message));
  return server::summary_from_json(*answer);
}

bool RelayEndpoint::reconnects() const { return !live_->client().closed(); }

void RelayEndpoint::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
}

std::expected<remote::ForwardInfo, ResponseError> RelayEndpoint::open_forward(const remote::ForwardSpec& spec) {
  auto r = live_->call("link/forward", json{{"spec", remote::forward_spec_json(spec)}});
  if (!r) return std::unexpected(std::move(r.error()));
  auto info = forward_info(*r, spec);
  std::lock_guard lock(mutex_);
  forwards_[info.id] = info;
  return info;
}

std::expected<void, ResponseError> RelayEndpoint::close_forward(int id) {
  auto r = live_->call("link/unforward", json{{"id", id}});
  std::lock_guard lock(mutex_);
  forwards_.erase(id);
  if (!r) return std::unexpected(std::move(r.error()));
  return {};
}

std::vector<remote::ForwardInfo> RelayEndpoint::list_forwards() const {
  std::lock_guard lock(mutex_);
  std::vector<remote::ForwardInfo> out;
  for (const auto& [id, f] : forwards_) out.push_back(f);
  return out;
}

void RelayEndpoint::on_state(std::function<void(const remote::HostState&)> handler) {
  std::lock_guard lock(mutex_);
  state_handler_ = std::move(handler);
}

void RelayEndpoint::on_closed(std::function<void(const std::string& why)> handler) {
  live_->client().on_closed(handler);
  if (handler && live_->client().closed()) handler("the live ferry closed the connection");
}

std::unique_ptr<LiveServer> live_for(const GlobalOptions& g, const deploy::ProjectConfig& project) {
  if (g.ssh_config || g.trust) return nullptr;
  // Trusted already (an untrusted one is asked about, or refused, on a command's own path).
  if (!admitted_in_this_process(project) && !deploy::TrustStore().check(project).trusted()) return nullptr;
  return LiveServer::find(project);
}

std::unique_ptr<RelayEndpoint> relay_for(const GlobalOptions& g, const deploy::ProjectConfig& project) {
  auto live = live_for(g, project);
  return live ? std::make_unique<RelayEndpoint>(std::move(live)) : nullptr;
}

std::expected<std::unique_ptr<remote::Endpoint>, int> agent_endpoint(const GlobalOptions& g, const deploy::ProjectConfig& project,
                                                                    const std::string& who) {
  if (auto relay = relay_for(g, project)) return std::unique_ptr<remote::Endpoint>(std::move(relay));
  auto made = sync::make_project_endpoint(project, cli_endpoint_options(g));
  if (!made) {
    std::cerr << who << ": " << made.error().message << "\n";
    return std::unexpected(exit_status::kUsage);
  }
  if (!connect_cli_endpoint(*made, who)) return std::unexpected(exit_status::kFailed);
  return std::move(made->endpoint);
}

std::string RelayEndpoint::description() const { return live_->endpoint() + ", through ferry (pid " + std::to_string(live_->pid()) + ")"; }

}  // namespace ferry::cli

// RelayEndpoint (relay_endpoint.hpp).
#include "helper/cli/relay_endpoint.hpp"

#include "protocol/json_binary.hpp"

namespace ferry::cli {

using remote::json;
using remote::ResponseError;

RelayEndpoint::RelayEndpoint(std::unique_ptr<LiveServer> live) : live_(std::move(live)) {
  const json a = live_->hello().value("agent", json::object());
  info_.protocol_version = a.value("protocolVersion", 0);
  info_.version = a.value("version", "");
  info_.pid = a.value("pid", 0LL);
  info_.root = a.value("root", "");
  info_.os = a.value("os", "");
  info_.arch = a.value("arch", "");
  info_.hostname = a.value("hostname", "");
}

std::expected<remote::AgentInfo, ResponseError> RelayEndpoint::connect(std::chrono::milliseconds) { return info_; }

std::expected<json, ResponseError> RelayEndpoint::call(std::string_view method, json params, std::chrono::milliseconds) {
  std::lock_guard lock(mutex_);
  auto r = live_->call("agent/call", json{{"method", std::string(method)}, {"params", protocol::binary_as_text(params)}});
  if (!r) return std::unexpected(std::move(r.error()));
  return protocol::text_as_binary(*r);
}

std::expected<void, ResponseError> RelayEndpoint::notify(std::string_view method, json) {
  return std::unexpected(ResponseError{protocol::error_code::kMethodNotFound,
                                       std::string(method) + ": a command riding the live ferry sends no notifications", {}});
}

std::unique_ptr<RelayEndpoint> relay_for(const GlobalOptions& g, const deploy::ProjectConfig& project) {
  if (g.ssh_config || g.trust) return nullptr;
  auto live = LiveServer::find(project);
  return live ? std::make_unique<RelayEndpoint>(std::move(live)) : nullptr;
}

std::string RelayEndpoint::description() const { return live_->endpoint() + ", through ferry (pid " + std::to_string(live_->pid()) + ")"; }

}  // namespace ferry::cli

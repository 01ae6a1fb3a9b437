// host/connect: starts the project's agent (ferry-agent in the local sandbox for host "local";
// SSH hosts join when SshEndpoint lands) and reports what the handshake learned.
#include <memory>
#include <mutex>

#include <spdlog/spdlog.h>

#include "helper/remote/local_endpoint.hpp"
#include "helper/server/host_session.hpp"
#include "helper/server/project_lookup.hpp"
#include "protocol/messages.hpp"

namespace ferry::server {

namespace p = ferry::protocol;

HostSession::~HostSession() { close(); }

void HostSession::close() {
  std::lock_guard lock(mutex_);
  if (endpoint_) endpoint_->close();
  endpoint_.reset();
}

std::expected<p::HostConnectResult, p::ResponseError> HostSession::connect(const deploy::ProjectConfig& config,
                                                                            const p::CancellationToken& cancel) {
  if (config.host != "local")
    return std::unexpected(p::ResponseError{p::error_code::kAgentUnavailable,
                                            "cannot connect " + config.host +
                                                ": only the \"local\" host is supported by this build (SSH hosts come "
                                                "with the SSH endpoint)",
                                            p::json{{"host", config.host}}});
  remote::LocalEndpointOptions options;
  options.project_name = config.name;
  auto endpoint = std::make_unique<remote::LocalEndpoint>(std::move(options));
  auto info = endpoint->connect();
  if (!info) return std::unexpected(info.error());
  if (cancel.cancelled()) {
    endpoint->close();
    return std::unexpected(p::cancelled_error(p::method::kHostConnect));
  }
  p::HostConnectResult result{config.host, info->version, info->protocol_version, info->root};
  std::lock_guard lock(mutex_);
  if (endpoint_) endpoint_->close();  // a reconnect replaces the old link
  endpoint_ = std::move(endpoint);
  spdlog::info("connected to {}", endpoint_->description());
  return result;
}

void bind_host_methods(p::BindingTable& table, const ServerOptions& options, HostSession& session) {
  table.request<p::HostConnectParams, p::HostConnectResult>(
      p::method::kHostConnect,
      [&options, &session](const p::HostConnectParams& params,
                           p::CallContext& ctx) -> std::expected<p::HostConnectResult, p::ResponseError> {
        auto config = lookup_project(params.path, options);
        if (!config) return std::unexpected(config.error());
        auto progress = ctx.progress();
        progress.begin("Connecting to " + config->host);
        return session.connect(*config, ctx.cancellation());
      },
      p::Execution::worker);
}

}  // namespace ferry::server

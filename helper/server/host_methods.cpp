// host/connect: links the project to its host (ferry-agent in the local sandbox for host "local",
// over SSH otherwise) and reports what the handshake learned. The link is the project's one
// (project_session.hpp): a second host/connect returns the live link instead of making another.
#include <spdlog/spdlog.h>

#include "helper/server/host_methods.hpp"
#include "protocol/messages.hpp"
#include "protocol/messages_host.hpp"

namespace ferry::server {

namespace p = ferry::protocol;

std::expected<p::HostConnectResult, p::ResponseError> connect_host(const ServerContext& ctx,
                                                                    const std::optional<std::string>& path,
                                                                    p::CallContext& call) {
  auto config = lookup_project(path, ctx.workspace);
  if (!config) return std::unexpected(config.error());
  auto progress = call.progress();
  progress.begin("Connecting to " + config->host);
  auto link = ctx.sessions.link(*config, call.cancellation(), [&progress](const std::string& m) { progress.report(m); });
  progress.end(link ? "connected" : "failed");
  if (!link) return std::unexpected(link.error());
  const auto& info = (*link)->info();
  return p::HostConnectResult{(*link)->host(), info.version, info.protocol_version, info.root, info.os, info.arch};
}

void bind_host_methods(p::BindingTable& table, const ServerContext& ctx) {
  table.request<p::HostConnectParams, p::HostConnectResult>(
      p::method::kHostConnect,
      [&ctx](const p::HostConnectParams& params, p::CallContext& call) { return connect_host(ctx, params.path, call); },
      p::Execution::worker);
  // Closes the project's link (its runs go on on the box; tunnels close); the next request that
  // needs the host links again.
  table.request<p::HostConnectParams, p::HostDisconnectResult>(
      p::method::kHostDisconnect,
      [&ctx](const p::HostConnectParams& params, p::CallContext&) -> std::expected<p::HostDisconnectResult, p::ResponseError> {
        auto config = lookup_project(params.path, ctx.workspace);
        if (!config) return std::unexpected(config.error());
        const bool was = ctx.sessions.disconnect(config->root);
        if (was && !ctx.questions.traits().ferry)
          ctx.questions.show(MessageType::info, "ferry: disconnected from " + config->host + " (runs go on there)");
        return p::HostDisconnectResult{config->host, was};
      },
      p::Execution::worker);
  if (ctx.options.test_methods) {
    // The transcripts' way to make the server ask host/confirmHostKey without an SSH server:
    // params are the question, the result is the client's decision.
    table.request<p::ConfirmHostKeyParams, p::ConfirmHostKeyResult>(
        p::method::kTestConfirmHostKey,
        [&ctx](const p::ConfirmHostKeyParams& params, p::CallContext& call) -> std::expected<p::ConfirmHostKeyResult, p::ResponseError> {
          auto decision = ctx.questions.confirm_host_key(params.host, params.key_type, params.fingerprint, call.cancellation());
          if (!decision) return std::unexpected(decision.error());
          return p::ConfirmHostKeyResult{*decision};
        },
        p::Execution::worker);
  }
  table.reserve_name(p::method::kHostStateChanged);
  table.reserve_name(p::method::kHostConfirmHostKey);
  table.reserve_name(p::method::kHostPassphrase);
}

}  // namespace ferry::server

// tunnel/open, tunnel/close, tunnel/list over the connected host's endpoint (ferry.json's tunnels
// are project_tunnels.hpp's). The endpoint does the work (helper/remote, helper/ssh); this
// file only translates JSON.
#include <spdlog/spdlog.h>

#include "helper/remote/endpoint.hpp"
#include "helper/remote/forward_spec.hpp"
#include "helper/remote/job_endpoint.hpp"
#include "helper/server/error_codes.hpp"
#include "helper/server/host_methods.hpp"
#include "protocol/messages_tunnel.hpp"

namespace ferry::server {

namespace p = ferry::protocol;

namespace {

using p::TunnelCloseParams;
using p::TunnelListParams;
using p::TunnelOpenParams;

// The workspace project's link if it is live, without connecting.
ProjectLinkPtr live_link(const ServerContext& ctx) {
  auto config = lookup_project(std::nullopt, ctx.workspace);
  return config ? ctx.sessions.current(config->root) : nullptr;
}

// A tunnel to (or from) an allocation's node says so.
p::TunnelInfo node_tunnel_info(const remote::JobEndpoint& node, const remote::ForwardInfo& f) {
  auto info = remote::tunnel_info(f);
  info.description += " (on " + node.description() + ")";
  return info;
}

}  // namespace

// Tunnels are the workspace project's: tunnel/open links it if it is not yet; close and list
// only look at a live link.
void bind_tunnel_methods(p::BindingTable& table, const ServerContext& ctx) {
  table.request<TunnelOpenParams, p::TunnelInfo>(
      p::method::kTunnelOpen,
      [&ctx](const TunnelOpenParams& params, p::CallContext& call) -> std::expected<p::TunnelInfo, p::ResponseError> {
        auto spec = remote::forward_spec_from_json(params.raw);
        if (!spec)
          return std::unexpected(response_error({ErrorKind::invalid_input, spec.error()}, p::method::kTunnelOpen));
        auto link = ctx.link(std::nullopt, call.cancellation());
        if (!link) return std::unexpected(link.error());
        // A Slurm project's allocation holds the node the work runs on: its tunnels go there.
        auto node = (*link)->allocation_node();
        if (!node) return std::unexpected(node.error());
        remote::Endpoint& where = *node ? static_cast<remote::Endpoint&>(**node) : (*link)->endpoint();
        auto info = where.open_forward(*spec);
        if (!info) return std::unexpected(info.error());
        return *node ? node_tunnel_info(**node, *info) : remote::tunnel_info(*info);
      },
      p::Execution::worker);
  table.request<TunnelCloseParams, p::TunnelCloseResult>(
      p::method::kTunnelClose,
      [&ctx](const TunnelCloseParams& params, p::CallContext&) -> std::expected<p::TunnelCloseResult, p::ResponseError> {
        auto link = live_link(ctx);
        if (!link)
          return std::unexpected(response_error(
              {ErrorKind::invalid_input, "no tunnel " + std::to_string(params.id) + " (not connected)"},
              p::method::kTunnelClose));
        auto* node = params.id >= remote::kJobForwardIds ? link->open_allocation_node() : nullptr;
        auto r = node ? node->close_forward(params.id) : link->endpoint().close_forward(params.id);
        if (!r) return std::unexpected(r.error());
        return p::TunnelCloseResult{params.id};
      },
      p::Execution::worker);
  table.request<TunnelListParams, p::TunnelListResult>(
      p::method::kTunnelList,
      [&ctx](const TunnelListParams&, p::CallContext&) -> std::expected<p::TunnelListResult, p::ResponseError> {
        p::TunnelListResult list;
        if (auto link = live_link(ctx)) {
          for (const auto& f : link->endpoint().list_forwards()) list.tunnels.push_back(remote::tunnel_info(f));
          if (auto* node = link->open_allocation_node())
            for (const auto& f : node->list_forwards()) list.tunnels.push_back(node_tunnel_info(*node, f));
        }
        return list;
      },
      p::Execution::worker);
}

}  // namespace ferry::server

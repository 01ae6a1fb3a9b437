// tunnel/open, tunnel/close, tunnel/list over the connected host's endpoint, and ferry.json's
// tunnels opened on host/connect. The endpoint does the work (helper/remote, helper/ssh); this
// file only translates JSON.
#include <spdlog/spdlog.h>

#include "helper/remote/endpoint.hpp"
#include "helper/remote/forward_spec.hpp"
#include "helper/server/host_methods.hpp"

namespace ferry::server {

namespace p = ferry::protocol;

namespace {

constexpr std::string_view kTunnelOpen = "tunnel/open";
constexpr std::string_view kTunnelClose = "tunnel/close";
constexpr std::string_view kTunnelList = "tunnel/list";

// Params pass through as JSON: forward_spec_from_json checks them with tunnel-specific messages.
struct TunnelOpenParams {
  p::json raw;
};
std::optional<p::DecodeError> from_json(const p::json& j, TunnelOpenParams& out, const std::string&) {
  if (!j.is_object()) return p::DecodeError{"", "expected an object"};
  out.raw = j;
  return std::nullopt;
}

struct TunnelCloseParams {
  int id = 0;
};
std::optional<p::DecodeError> from_json(const p::json& j, TunnelCloseParams& out, const std::string&) {
  if (!j.is_object() || !j.contains("id") || !j["id"].is_number_integer())
    return p::DecodeError{"/id", "expected the tunnel's id (an integer, from tunnel/open or tunnel/list)"};
  out.id = j["id"].get<int>();
  return std::nullopt;
}

struct TunnelListParams {};
std::optional<p::DecodeError> from_json(const p::json& j, TunnelListParams&, const std::string&) {
  if (!j.is_null() && !j.is_object()) return p::DecodeError{"", "expected an object"};
  return std::nullopt;
}

// The workspace project's link if it is live, without connecting.
ProjectLinkPtr live_link(const ServerContext& ctx) {
  auto config = lookup_project(std::nullopt, ctx.workspace);
  return config ? ctx.sessions.current(config->root) : nullptr;
}

}  // namespace

void open_project_tunnels(remote::Endpoint& endpoint, const deploy::ProjectConfig& config) {
  for (const auto& t : config.tunnels) {
    auto opened = endpoint.open_forward(remote::forward_spec_from(t));
    if (opened) spdlog::info("tunnel {}: {}", t.name, remote::describe(*opened));
    else spdlog::warn("tunnel {} from ferry.json not opened: {}", t.name, opened.error().message);
  }
}

// Tunnels are the workspace project's: tunnel/open links it if it is not yet; close and list
// only look at a live link.
void bind_tunnel_methods(p::BindingTable& table, const ServerContext& ctx) {
  table.request<TunnelOpenParams, p::json>(
      kTunnelOpen,
      [&ctx](const TunnelOpenParams& params, p::CallContext& call) -> std::expected<p::json, p::ResponseError> {
        auto spec = remote::forward_spec_from_json(params.raw);
        if (!spec)
          return std::unexpected(p::ResponseError{p::error_code::kInvalidParams, "tunnel/open: " + spec.error(), {}});
        auto link = ctx.link(std::nullopt, call.cancellation());
        if (!link) return std::unexpected(link.error());
        auto info = (*link)->endpoint().open_forward(*spec);
        if (!info) return std::unexpected(info.error());
        return remote::to_json(*info);
      },
      p::Execution::worker);
  table.request<TunnelCloseParams, p::json>(
      kTunnelClose,
      [&ctx](const TunnelCloseParams& params, p::CallContext&) -> std::expected<p::json, p::ResponseError> {
        auto link = live_link(ctx);
        if (!link)
          return std::unexpected(p::ResponseError{p::error_code::kInvalidParams,
                                                  "tunnel/close: no tunnel " + std::to_string(params.id) + " (not connected)", {}});
        auto r = link->endpoint().close_forward(params.id);
        if (!r) return std::unexpected(r.error());
        return p::json{{"closed", params.id}};
      },
      p::Execution::worker);
  table.request<TunnelListParams, p::json>(
      kTunnelList,
      [&ctx](const TunnelListParams&, p::CallContext&) -> std::expected<p::json, p::ResponseError> {
        p::json list = p::json::array();
        if (auto link = live_link(ctx))
          for (const auto& f : link->endpoint().list_forwards()) list.push_back(remote::to_json(f));
        return p::json{{"tunnels", list}};
      },
      p::Execution::worker);
}

}  // namespace ferry::server

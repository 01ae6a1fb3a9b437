// tunnel/open, tunnel/close, tunnel/list over the connected host's endpoint, and ferry.json's
// tunnels opened on host/connect. The endpoint does the work (helper/remote, helper/ssh); this
// file only translates JSON.
#include <spdlog/spdlog.h>

#include "helper/remote/endpoint.hpp"
#include "helper/remote/forward_spec.hpp"
#include "helper/server/host_session.hpp"

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

p::ResponseError not_connected(std::string_view method) {
  return p::ResponseError{p::error_code::kAgentUnavailable, std::string(method) + ": not connected; call host/connect first", {}};
}

}  // namespace

void open_project_tunnels(remote::Endpoint& endpoint, const deploy::ProjectConfig& config) {
  for (const auto& t : config.tunnels) {
    auto opened = endpoint.open_forward(remote::forward_spec_from(t));
    if (opened) spdlog::info("tunnel {}: {}", t.name, remote::describe(*opened));
    else spdlog::warn("tunnel {} from ferry.json not opened: {}", t.name, opened.error().message);
  }
}

void bind_tunnel_methods(p::BindingTable& table, HostSession& session) {
  table.request<TunnelOpenParams, p::json>(
      kTunnelOpen,
      [&session](const TunnelOpenParams& params, p::CallContext&) -> std::expected<p::json, p::ResponseError> {
        auto spec = remote::forward_spec_from_json(params.raw);
        if (!spec)
          return std::unexpected(p::ResponseError{p::error_code::kInvalidParams, "tunnel/open: " + spec.error(), {}});
        return session.with_endpoint([&](remote::Endpoint* e) -> std::expected<p::json, p::ResponseError> {
          if (!e) return std::unexpected(not_connected(kTunnelOpen));
          auto info = e->open_forward(*spec);
          if (!info) return std::unexpected(info.error());
          return remote::to_json(*info);
        });
      },
      p::Execution::worker);
  table.request<TunnelCloseParams, p::json>(
      kTunnelClose,
      [&session](const TunnelCloseParams& params, p::CallContext&) -> std::expected<p::json, p::ResponseError> {
        return session.with_endpoint([&](remote::Endpoint* e) -> std::expected<p::json, p::ResponseError> {
          if (!e) return std::unexpected(not_connected(kTunnelClose));
          auto r = e->close_forward(params.id);
          if (!r) return std::unexpected(r.error());
          return p::json{{"closed", params.id}};
        });
      },
      p::Execution::worker);
  table.request<TunnelListParams, p::json>(
      kTunnelList,
      [&session](const TunnelListParams&, p::CallContext&) -> std::expected<p::json, p::ResponseError> {
        return session.with_endpoint([&](remote::Endpoint* e) -> std::expected<p::json, p::ResponseError> {
          p::json list = p::json::array();
          if (e)
            for (const auto& f : e->list_forwards()) list.push_back(remote::to_json(f));
          return p::json{{"tunnels", list}};
        });
      },
      p::Execution::worker);
}

}  // namespace ferry::server

// The raw adapter: binds into the agent's BindingTable a method whose params are not typed yet
// (any JSON comes in, JSON goes out), so the old Request -> Response handlers of the run, gpu,
// autostop and spot families are served by the one Dispatcher while they wait for typed params
// (sync/* uses RawParams to run its own typed table after the read-only source check).
#pragma once

#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "protocol/binding_table.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::agent {

// The params as they came, borrowed for the handler's call (the table decodes from a reference
// to the request's params: megabytes of sync data are not copied).
struct RawParams {
  const protocol::json* value = nullptr;
  const protocol::json& get() const { return *value; }
};
inline std::optional<protocol::DecodeError> from_json(const protocol::json& j, RawParams& out, const std::string&) {
  out.value = &j;
  return std::nullopt;
}

inline std::expected<protocol::json, protocol::ResponseError> to_outcome(protocol::Response r) {
  if (auto* e = std::get_if<protocol::ResponseError>(&r.outcome)) return std::unexpected(std::move(*e));
  return std::move(std::get<protocol::json>(r.outcome));
}

// Binds `name` to an old-style handler: it sees the request as it came (id, method, params).
using RawHandler = std::function<protocol::Response(const protocol::Request&)>;
inline void bind_raw(protocol::BindingTable& table, std::string_view name, RawHandler fn) {
  table.request<RawParams, protocol::json>(
      name, [fn = std::move(fn)](const RawParams& p, protocol::CallContext& ctx) {
        return to_outcome(fn(protocol::Request{ctx.id(), ctx.method(), p.get()}));
      });
}

// The same for handlers that answer a whole family and nullopt for names not theirs (bound
// only under their own names, so nullopt does not happen; it would read as -32601).
using RawFamilyHandler = std::function<std::optional<protocol::Response>(const protocol::Request&)>;
inline void bind_raw_family(protocol::BindingTable& table, std::initializer_list<std::string_view> names,
                            const RawFamilyHandler& fn) {
  for (auto name : names) {
    bind_raw(table, name, [fn](const protocol::Request& r) {
      if (auto reply = fn(r)) return std::move(*reply);
      return protocol::make_error(r.id, protocol::error_code::kMethodNotFound, "method not found: " + r.method);
    });
  }
}

}  // namespace ferry::agent

// The agent's sync/* methods: see sync_methods.hpp. Params and results are typed in
// protocol/sync_wire.hpp and documented in protocol/spec/protocol.md ("Agent sync methods").
#include "remote-runtime/agent/sync_methods.hpp"

#include <exception>

#include "protocol/sync_wire.hpp"
#include "remote-runtime/agent/sync/sync_bindings.hpp"
#include "remote-runtime/agent/sync/sync_context.hpp"

namespace ferry::agent {
namespace {

using protocol::json;
namespace ec = protocol::error_code;
namespace method = protocol::sync_wire::method;

}  // namespace

RequestLane classify_sync_request(const protocol::Request& r) {
  const std::string& m = r.method;
  if (m == method::kWriteBatch) return {RequestLane::parallel, "batch"};
  if (m == method::kFilePart) return {RequestLane::parallel, "part"};
  if (m == method::kFileAppend || m == method::kFileCommit || m == method::kFileAbort) {
    const json* handle = r.params.is_object() && r.params.contains("handle") ? &r.params["handle"] : nullptr;
    // A request without a usable handle is refused by the method itself, on the reader thread.
    if (!handle || !handle->is_number_integer()) return {};
    std::string key = "upload:" + std::to_string(handle->get<std::int64_t>());
    return {m == method::kFileAppend ? RequestLane::parallel : RequestLane::inline_now, std::move(key)};
  }
  if (m == method::kState || m == method::kList || m == method::kDelete) return {RequestLane::barrier, {}};
  return {};
}

SyncMethods::SyncMethods(RootPath root) : ctx_(std::make_unique<sync::SyncContext>(std::move(root))) {
  sync::bind_listing_methods(table_, *ctx_);
  sync::bind_read_methods(table_, *ctx_);
  sync::bind_write_methods(table_, *ctx_);
  sync::bind_tree_methods(table_, *ctx_);
}

SyncMethods::~SyncMethods() = default;

std::optional<protocol::Response> SyncMethods::handle(const protocol::Request& r) {
  if (!r.method.starts_with("sync/")) return std::nullopt;
  const protocol::MethodEntry* entry = table_.find(r.method);
  if (!entry || entry->is_notification)
    return protocol::make_error(r.id, ec::kMethodNotFound, "the agent has no method '" + r.method + "'");
  // Checked before the params are decoded: whatever else is wrong with a write, the answer that
  // helps is that it may not name a read-only source.
  if (r.params.is_object() && r.params.contains("source") && !protocol::sync_wire::allows_source(r.method)) {
    auto e = sync::source_not_allowed(r.method);
    return protocol::make_error(r.id, e.code, std::move(e.message));
  }
  // The agent's reader and scheduler own ordering and threads (classify_sync_request), so the
  // table's entry runs here directly; there is no $/cancelRequest on this wire.
  protocol::CallContext call(r.method, r.id, protocol::CancellationToken(), json(), {});
  try {
    auto result = entry->request(r.params, call);
    if (!result) return protocol::make_error(r.id, result.error().code, std::move(result.error().message), std::move(result.error().data));
    return protocol::make_result(r.id, std::move(*result));
  } catch (const std::exception& e) {
    // A bug, not bad input (params are decoded without throwing): answered, and the agent lives on.
    return protocol::make_error(r.id, ec::kInternalError, r.method + ": internal error: " + e.what());
  }
}

}  // namespace ferry::agent

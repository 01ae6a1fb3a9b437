// The agent's sync/* methods: see sync_methods.hpp. Params and results are typed in
// protocol/sync_wire.hpp and documented in protocol/spec/protocol.md ("Agent sync methods").
#include "remote-runtime/agent/sync_methods.hpp"

#include <exception>

#include "protocol/sync_wire.hpp"
#include "remote-runtime/agent/raw_binding.hpp"
#include "remote-runtime/agent/sync/sync_bindings.hpp"
#include "remote-runtime/agent/sync/sync_context.hpp"

namespace ferry::agent {
namespace {

using protocol::json;
namespace method = protocol::sync_wire::method;

}  // namespace

RequestLane classify_sync_request(const std::string& m, const json& params) {
  if (m == method::kWriteBatch) return {RequestLane::parallel, "batch"};
  if (m == method::kFilePart) return {RequestLane::parallel, "part"};
  if (m == method::kFileAppend || m == method::kFileCommit || m == method::kFileAbort) {
    const json* handle = params.is_object() && params.contains("handle") ? &params["handle"] : nullptr;
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

void SyncMethods::release_idle_memory() const { ctx_->scratch().clear(); }

void SyncMethods::bind(protocol::BindingTable& agent_table) const {
  for (const auto& name : table_.method_names()) {
    const protocol::MethodEntry* entry = table_.find(name);
    if (!entry || entry->is_notification) continue;
    agent_table.request<RawParams, json>(
        name, [entry](const RawParams& p, protocol::CallContext& call) -> std::expected<json, protocol::ResponseError> {
          // Checked before the params are decoded: whatever else is wrong with a write, the
          // answer that helps is that it may not name a read-only source.
          const json& params = p.get();
          if (params.is_object() && params.contains("source") && !protocol::sync_wire::allows_source(entry->name))
            return std::unexpected(sync::source_not_allowed(entry->name));
          // Ordering and threads are the agent's RequestScheduler's (classify_sync_request).
          (void)sync::GenerationBump::take_last_on_this_thread();
          auto reply = entry->request(params, call);
          // A write's reply carries the base's stamp right after its own bump: a push whose
          // replies end at its start stamp plus its writes knows nobody else wrote, no
          // sync/state needed (protocol.md, sync/state).
          if (auto g = sync::GenerationBump::take_last_on_this_thread(); g && reply && reply->is_object())
            (*reply)["stamp"] = protocol::sync_wire::to_json(protocol::sync_wire::StateResult{g->epoch, g->generation});
          return reply;
        });
  }
}

}  // namespace ferry::agent

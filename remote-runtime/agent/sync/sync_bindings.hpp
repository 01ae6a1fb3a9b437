// The agent's sync/* method families, each binding its methods into the agent's sync table
// (SyncMethods, sync_methods.hpp). One file per family: listing (state, list), reads (read,
// readDelta, signature), writes (writeBatch, applyDelta and the streamed file methods) and tree
// ops (mkdir, symlink, setAttrs, delete).
#pragma once

#include <expected>

#include "protocol/binding_table.hpp"
#include "remote-runtime/agent/sync/sync_context.hpp"

namespace ferry::agent::sync {

using protocol::BindingTable;
using protocol::CallContext;
// What each method's function answers: its typed result, or the error the table sends.
template <class R>
using Reply = std::expected<R, ResponseError>;

void bind_listing_methods(protocol::BindingTable& table, SyncContext& ctx);
void bind_read_methods(protocol::BindingTable& table, SyncContext& ctx);
void bind_write_methods(protocol::BindingTable& table, SyncContext& ctx);
void bind_tree_methods(protocol::BindingTable& table, SyncContext& ctx);

}  // namespace ferry::agent::sync

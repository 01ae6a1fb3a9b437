// The agent's sync/* methods: the remote half of a push or pull (listing, batched whole-file
// writes, signatures, deltas, deletes, dirs, links, attributes, chunked reads), bound through
// protocol's BindingTable by the method families in agent/sync/*_methods.cpp. Every path is a
// wire path checked by normalize_wire_path and written through FileWriter's O_NOFOLLOW walk, so
// no write reaches outside the agent root. The one read outside it is a read-only pull source
// (`source`: list, read, readDelta of Python sources only; see agent/sync/sync_context.hpp).
// Literal bytes travel zstd-compressed as CBOR binary (protocol/payload_codec.hpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/binding_table.hpp"
#include "protocol/jsonrpc.hpp"
#include "remote-runtime/agent/request_scheduler.hpp"
#include "remote-runtime/agent/root_path.hpp"

namespace ferry::agent {

namespace sync {
class SyncContext;
}

// Which sync requests may run on the agent's workers (RequestScheduler), and what they must
// wait for. Why this order is safe:
// - sync/writeBatch and sync/fileAppend go to workers. A helper never has two requests for one
//   path in flight (its plan holds each path once), and each file lands by one rename, so two
//   writes that overlap in time end as one of the serial orders either way; a helper that needs
//   an order waits for a reply before sending the next request, and such a reply is only sent
//   when the work is done. Appends to one upload may overlap each other: the upload's lock
//   orders their pwrite + range bookkeeping, and offsets make arrival order irrelevant.
// - sync/fileCommit and sync/fileAbort wait for every earlier append of their upload (keyed by
//   handle), so a commit never checks a file whose chunks are still being written.
// - sync/state, sync/list and sync/delete wait for every earlier parallel request: the
//   generation a helper reads counts every write it sent before, a listing sees them, and a
//   delete never races a write it was ordered after.
// - everything else (fileBegin, mkdir, symlink, setAttrs, applyDelta, signature, read,
//   readDelta) runs on the reader thread in arrival order, as before.
// Non-sync methods: inline (the caller decides about its own, e.g. agent/shutdown).
// (RequestScheduler's classifier; it sees the params before they are decoded.)
RequestLane classify_sync_request(const std::string& method, const protocol::json& params);

class SyncMethods {
 public:
  explicit SyncMethods(RootPath root);
  ~SyncMethods();
  SyncMethods(const SyncMethods&) = delete;
  SyncMethods& operator=(const SyncMethods&) = delete;

  // Binds every sync/* method into the agent's table (the one its Dispatcher serves), each
  // behind the read-only source check, which comes before the params are decoded. Thread-safe
  // once bound: requests classified parallel by classify_sync_request run on several threads at
  // once. Params are decoded by this family's own table (protocol/sync_wire.hpp): bad ones get
  // -32602 naming the field, never a throw. `this` must outlive `agent_table`'s use.
  void bind(protocol::BindingTable& agent_table) const;

  // Frees the buffers kept for the next pushed chunk (the agent calls it when the link is idle).
  void release_idle_memory() const;

  // The methods bound (for tests and capability lists).
  std::vector<std::string> method_names() const { return table_.method_names(); }

 private:
  std::unique_ptr<sync::SyncContext> ctx_;
  protocol::BindingTable table_;
};

}  // namespace ferry::agent

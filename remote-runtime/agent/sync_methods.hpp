// The agent's sync/* methods: the remote half of a push or pull (listing, batched whole-file
// writes, signatures, deltas, deletes, dirs, links, attributes, chunked reads). Every path is a
// wire path checked by normalize_wire_path and written through FileWriter's O_NOFOLLOW walk, so
// no write reaches outside the agent root. The one read outside it is a read-only pull source
// (`source`: list, read, readDelta of Python sources only; see sync_methods.cpp). Literal bytes
// travel zstd-compressed as CBOR binary.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "protocol/jsonrpc.hpp"
#include "remote-runtime/agent/request_scheduler.hpp"
#include "remote-runtime/agent/root_path.hpp"

namespace ferry::agent {

namespace sync {
class FileWriter;
class PendingFile;
struct Precondition;
}

// Largest decompressed payload accepted in one request (a hostile size field cannot make the
// agent allocate more).
inline constexpr std::size_t kMaxSyncPayload = 256u << 20;
inline constexpr std::size_t kMaxReadChunk = 8u << 20;
// Files of one sync/writeBatch written concurrently (FileWriter is thread-safe: *at() calls only).
inline constexpr std::size_t kWriteThreads = 16;
// Streamed uploads open at once (each holds a temp file and a descriptor).
inline constexpr std::size_t kMaxUploads = 64;
// Paged listings kept between their requests (each holds a directory per level of its walk), and
// the most entries one page may carry (~100 bytes each on the wire, far under the frame cap).
inline constexpr std::size_t kMaxListings = 8;
inline constexpr std::int64_t kMaxListPageEntries = 200'000;

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
RequestLane classify_sync_request(const protocol::Request& request);

class SyncMethods {
 public:
  explicit SyncMethods(RootPath root);
  ~SyncMethods();
  SyncMethods(const SyncMethods&) = delete;
  SyncMethods& operator=(const SyncMethods&) = delete;

  // A reply for sync/* methods, nullopt for any other method. Thread-safe: requests classified
  // parallel by classify_sync_request run on several threads at once.
  std::optional<protocol::Response> handle(const protocol::Request& request);

 private:
  protocol::Response dispatch(const protocol::Request& request);
  // The writer rooted at `base` (a directory under the root, created if missing).
  // Shared: a worker may still write through a writer that a later request replaces.
  std::expected<std::shared_ptr<sync::FileWriter>, std::string> writer_for(const std::string& base);
  std::expected<std::shared_ptr<sync::FileWriter>, std::string> writer_for_locked(const std::string& base);
  RootPath root_;
  std::mutex writers_mu_;
  std::map<std::string, std::shared_ptr<sync::FileWriter>> writers_;
  // Listings taken in pages, by cursor.
  struct Listing;
  std::mutex listings_mu_;
  std::map<std::int64_t, std::shared_ptr<Listing>> listings_;
  std::int64_t next_listing_ = 1;
  // Files too large for one request, streamed by sync/fileBegin, fileAppend, fileCommit.
  struct Upload;
  std::mutex uploads_mu_;  // the map; each Upload has its own lock for its file
  std::map<std::int64_t, std::shared_ptr<Upload>> uploads_;
  std::int64_t next_upload_ = 1;
};

}  // namespace ferry::agent

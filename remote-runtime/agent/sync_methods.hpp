// The agent's sync/* methods: the remote half of a push or pull (listing, batched whole-file
// writes, signatures, deltas, deletes, dirs, links, attributes, chunked reads). Every path is a
// wire path checked by normalize_wire_path and written through FileWriter's O_NOFOLLOW walk, so
// nothing reaches outside the agent root. Literal bytes travel zstd-compressed as CBOR binary.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "protocol/jsonrpc.hpp"
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

class SyncMethods {
 public:
  explicit SyncMethods(RootPath root);
  ~SyncMethods();
  SyncMethods(SyncMethods&&) noexcept;

  // A reply for sync/* methods, nullopt for any other method.
  std::optional<protocol::Response> handle(const protocol::Request& request);

 private:
  protocol::Response dispatch(const protocol::Request& request);
  // The writer rooted at `base` (a directory under the root, created if missing).
  std::expected<sync::FileWriter*, std::string> writer_for(const std::string& base);
  RootPath root_;
  std::map<std::string, std::unique_ptr<sync::FileWriter>> writers_;
  // Files too large for one request, streamed by sync/fileBegin, fileAppend, fileCommit.
  struct Upload;
  std::map<std::int64_t, std::unique_ptr<Upload>> uploads_;
  std::int64_t next_upload_ = 1;
};

}  // namespace ferry::agent

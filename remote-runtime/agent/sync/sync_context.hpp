// What the agent's sync/* method families share: the writers per base, the paged listings and
// the streamed uploads, and how one request finds where it works (`base` below the root, or a
// read-only `source`) and turns a WriteError into its reply. The methods themselves are bound
// by the *_methods.cpp files beside this one (sync_bindings.hpp).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/payload_codec.hpp"
#include "protocol/scratch_pool.hpp"
#include "protocol/sync_wire.hpp"
#include "remote-runtime/agent/root_path.hpp"
#include "remote-runtime/agent/sync/file_writer.hpp"
#include "remote-runtime/agent/sync/sync_generation.hpp"
#include "remote-runtime/agent/sync/tree_listing.hpp"

namespace ferry::agent::sync {

namespace wire = protocol::sync_wire;
using protocol::ResponseError;

inline constexpr std::size_t kMaxSyncPayload = protocol::kMaxSyncPayload;
inline constexpr std::size_t kMaxReadChunk = 8u << 20;
// Files of one sync/writeBatch written concurrently (FileWriter is thread-safe: *at() calls only).
inline constexpr std::size_t kWriteThreads = 16;
// Streamed uploads open at once (each holds a temp file and a descriptor).
inline constexpr std::size_t kMaxUploads = 64;
// Paged listings kept between their requests (each holds a directory per level of its walk), and
// the most entries one page may carry (~100 bytes each on the wire, far under the frame cap).
inline constexpr std::size_t kMaxListings = 8;
inline constexpr std::int64_t kMaxListPageEntries = 200'000;

// A read-only pull source (`source` instead of `base`): an absolute directory outside the
// mapping root, e.g. the interpreter's site-packages that `ferry env sync` mirrors. Only read
// methods may name one and only Python sources are served from it (protocol/python_sources.hpp),
// so it can never widen what the agent writes, nor hand out keys or data files.
struct ReadOnlySource {
  RootPath resolver;
  std::shared_ptr<FileWriter> lister_root;  // opened for TreeLister; never written through
};

// Where one request works, resolved.
struct Target {
  std::string method;
  std::string base;  // wire form; "" for a source
  std::shared_ptr<FileWriter> writer;  // held: a worker may still write through a replaced one
  std::optional<ReadOnlySource> source;
  const RootPath* root = nullptr;
  // A base outside the agent's root (absolute or "~/..."): its own root for this request.
  std::shared_ptr<const RootPath> base_root;

  FileWriter& w() const { return *writer; }
  const RootPath& resolver() const { return source ? source->resolver : base_root ? *base_root : *root; }
  // The wire path of a request's `path`: below `base` in the mapping, or inside the source.
  std::string wire_path(const std::string& path) const;
  // A read from a source: a Python source file of a sane size, else this error.
  std::optional<ResponseError> source_refuses(const std::string& path, std::uint64_t size) const;
  // method 'what': message, with data {code[, space]}; invalid_path is -32602, the rest -32094.
  ResponseError io_error(const std::string& what, const WriteError& e) const;
  wire::PathResult error_entry(const std::string& path, const WriteError& e) const;
};

// "M: why" as -32602, with optional data.
ResponseError invalid_params(std::string_view method, const std::string& why, std::optional<protocol::json> data = std::nullopt);
// A write (or sync/state, sync/signature) that names a read-only `source`.
ResponseError source_not_allowed(std::string_view method);
wire::PathResult ok_entry(const std::string& path);
// The room on the filesystem holding `root`, for a write that found it full: the helper turns
// it into "N free of M; this push writes K" instead of a bare "No space left on device".
protocol::json space_at(const std::filesystem::path& root);

// Holds the base's write gate while a request that can change the tree runs, and bumps the
// base's generation when it is done (also when it failed: the count only has to tell the helper
// whether anyone else wrote).
class GenerationBump {
 public:
  explicit GenerationBump(const Target& t);
  ~GenerationBump();
  // The record right after the last bump a request on this thread made (then forgotten): the
  // reply carries it, so a push needs no sync/state after its writes.
  static std::optional<SyncGeneration> take_last_on_this_thread();
  GenerationBump(const GenerationBump&) = delete;
  GenerationBump& operator=(const GenerationBump&) = delete;

 private:
  FileWriter* w_;
  posix::UniqueFd gate_;  // the write gate (sync_generation.hpp), let go after the bump
};

// A listing taken in pages (sync/list with pageEntries or pageMs, continued by cursor): the
// walk's state and the options its predicates read.
struct Listing {
  std::set<std::string> known, prune;
  std::vector<std::string> hash_under;
  bool hash_all = false;
  std::uint64_t hash_at_most = UINT64_MAX;
  bool python_only = false;  // a read-only source: regular Python source files only
  std::size_t page_entries = kMaxListPageEntries;
  std::int64_t page_ms = 1000;
  std::optional<TreeLister> lister;
};

// A file too large for one request, streamed by sync/fileBegin, fileAppend, fileCommit.
struct Upload {
  std::string path;
  PendingFile file;
  std::optional<Precondition> expect;
  std::uint64_t size = 0, received = 0;
  std::mutex mu;  // appends running on several workers: one at a time into `file`
  Upload(std::string p, PendingFile f, std::optional<Precondition> e, std::uint64_t n)
      : path(std::move(p)), file(std::move(f)), expect(std::move(e)), size(n) {}
};

class SyncContext {
 public:
  explicit SyncContext(RootPath root) : root_(std::move(root)) {}

  // Resolves a request's base or source; refuses a source for a method that may not read one,
  // and an agent root that is / or the user's home.
  std::expected<Target, ResponseError> open(std::string_view method, const wire::Where& where);

  const RootPath& root() const { return root_; }

  // Listings by cursor (the oldest dropped past kMaxListings).
  std::int64_t add_listing(std::shared_ptr<Listing> listing);
  std::shared_ptr<Listing> find_listing(std::int64_t id, bool remove);
  void drop_listing(std::int64_t id);

  // Uploads by handle.
  std::optional<std::string> upload_room() const;  // an error while kMaxUploads are open
  std::pair<std::int64_t, std::string> add_upload(std::shared_ptr<Upload> upload);  // handle, temp name
  std::shared_ptr<Upload> find_upload(std::int64_t handle, bool remove);
  // Drops `handle` if it still names `held` (a failed append ends the upload).
  void drop_upload(std::int64_t handle, const std::shared_ptr<Upload>& held);

  // Where pushed chunks are decompressed (see scratch_pool.hpp).
  protocol::ScratchPool& scratch() { return scratch_; }

 private:
  std::expected<std::shared_ptr<FileWriter>, std::string> writer_for(const std::string& base);
  std::expected<std::shared_ptr<FileWriter>, std::string> writer_for_locked(const std::string& base);
  // A project's other mappings lie outside the root the agent was started with (one link per
  // project serves them all): such a base is opened as a root of its own, once.
  struct OutsideBase {
    std::shared_ptr<const RootPath> root;
    std::shared_ptr<FileWriter> writer;
  };
  std::expected<OutsideBase, std::string> outside_base(const std::string& base);

  RootPath root_;
  std::mutex writers_mu_;
  std::map<std::string, std::shared_ptr<FileWriter>> writers_;
  std::map<std::string, OutsideBase> outside_;  // under writers_mu_
  std::mutex listings_mu_;
  std::map<std::int64_t, std::shared_ptr<Listing>> listings_;
  std::int64_t next_listing_ = 1;
  mutable std::mutex uploads_mu_;  // the map; each Upload has its own lock for its file
  std::map<std::int64_t, std::shared_ptr<Upload>> uploads_;
  std::int64_t next_upload_ = 1;
  protocol::ScratchPool scratch_;
};

}  // namespace ferry::agent::sync

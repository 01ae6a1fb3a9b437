// The agent's sync/* wire, typed: one Params and one Result struct per method, the method names,
// and to_json/from_json for both directions (the agent decodes params and encodes results, the
// helper's SyncClient the other way round). Byte strings stay CBOR binary; the shapes are those
// of protocol/spec/protocol.md ("Agent sync methods"), so older peers see the same bytes.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/json_reader.hpp"

namespace ferry::protocol::sync_wire {

using json = nlohmann::json;
using Bytes = std::vector<std::uint8_t>;  // CBOR binary on the wire
using Hash128 = std::array<std::uint8_t, 16>;  // xxh3-128, CBOR binary of 16 bytes
using Range = std::pair<std::uint64_t, std::uint64_t>;  // [offset, length]

// A push's file bytes in a request: owned where the request is built, borrowed where it is
// decoded. The agent's table decodes params from a reference to the message it holds for the
// call, so a chunk is not copied out of it (8 MiB per chunk, a tenth of the agent's push CPU).
// A decoded Payload is valid while the json it came from is.
class Payload {
 public:
  Payload() = default;
  Payload(Bytes owned) : owned_(std::move(owned)) {}  // implicit: requests are built from Bytes
  std::span<const std::uint8_t> bytes() const { return borrowed_ ? *borrowed_ : std::span<const std::uint8_t>(owned_); }
  std::size_t size() const { return bytes().size(); }
  // The bytes to send: moved out when owned, copied when borrowed.
  Bytes take() && { return borrowed_ ? Bytes(borrowed_->begin(), borrowed_->end()) : std::move(owned_); }
  void borrow(std::span<const std::uint8_t> from) { borrowed_ = from; }

 private:
  Bytes owned_;
  std::optional<std::span<const std::uint8_t>> borrowed_;
};

namespace method {
inline constexpr std::string_view kState = "sync/state";
inline constexpr std::string_view kList = "sync/list";
inline constexpr std::string_view kRead = "sync/read";
inline constexpr std::string_view kReadDelta = "sync/readDelta";
inline constexpr std::string_view kSignature = "sync/signature";
inline constexpr std::string_view kApplyDelta = "sync/applyDelta";
inline constexpr std::string_view kPrepareDelta = "sync/prepareDelta";
inline constexpr std::string_view kWriteBatch = "sync/writeBatch";
inline constexpr std::string_view kFileBegin = "sync/fileBegin";
inline constexpr std::string_view kFilePart = "sync/filePart";
inline constexpr std::string_view kFileAppend = "sync/fileAppend";
inline constexpr std::string_view kFileCommit = "sync/fileCommit";
inline constexpr std::string_view kFileAbort = "sync/fileAbort";
inline constexpr std::string_view kMkdir = "sync/mkdir";
inline constexpr std::string_view kSymlink = "sync/symlink";
inline constexpr std::string_view kSetAttrs = "sync/setAttrs";
inline constexpr std::string_view kDelete = "sync/delete";
}  // namespace method

// Every method, in the order protocol.md lists them.
inline constexpr std::array<std::string_view, 17> kAllMethods = {
    method::kState,      method::kList,       method::kRead,       method::kReadDelta,  method::kSignature, method::kPrepareDelta,
    method::kApplyDelta, method::kWriteBatch, method::kFileBegin,  method::kFilePart,   method::kFileAppend, method::kFileCommit,
    method::kFileAbort,  method::kMkdir,      method::kSymlink,    method::kSetAttrs,   method::kDelete};
// The methods that may name a read-only `source` instead of a `base`.
bool allows_source(std::string_view method);
// The methods that change the tree (each bumps the base's generation).
bool is_mutating(std::string_view method);

// Where a request works: `base` below the agent root ("" = the root) or, for a project's other
// mappings, an absolute or "~/" directory of its own; or, for the read methods only, `source`:
// an absolute read-only directory outside it (`ferry env sync`).
struct Where {
  std::string base;
  std::optional<std::string> source;
  static Where at_base(std::string b) { return Where{std::move(b), std::nullopt}; }
  static Where at_source(std::string s) { return Where{{}, std::move(s)}; }
};

// "The file there must still be this" (size + mtime), or "there must be nothing".
struct Expect {
  bool exists = false;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
};

// What a written file ends up as: the agent checks size and hash before it lands.
struct FileAttrs {
  std::uint64_t size = 0;
  Hash128 hash{};
  std::uint32_t mode = 0644;
  std::int64_t mtime_ns = 0;
};

// One path's outcome in a batch reply (writeBatch, mkdir, symlink, setAttrs, delete).
struct PathResult {
  std::string path;
  bool ok = true;
  std::optional<std::string> code;     // not_found, conflict, no_space, ... (failures)
  std::optional<std::string> message;  // failures
  std::optional<json> space;           // no_space: {path, availableBytes, totalBytes, availableInodes}
};

struct PathResults {
  std::vector<PathResult> results;
  std::optional<std::uint64_t> bytes_written;  // writeBatch only
};

struct OkResult {};  // {"ok": true}
struct PathOk {      // {"path", "ok": true}
  std::string path;
};

// --- sync/state -------------------------------------------------------------------------------
struct StateParams {
  Where where;
};
struct StateResult {
  std::string epoch;
  std::uint64_t generation = 0;
};

// --- sync/list --------------------------------------------------------------------------------
struct ListParams {
  Where where;
  std::optional<std::int64_t> cursor;  // a later page (with cancel: drop the listing)
  bool cancel = false;
  std::optional<std::vector<std::string>> known;       // files whose hash is not needed
  std::optional<std::vector<std::string>> prune;       // directories not walked
  std::optional<std::vector<std::string>> hash_under;  // pull: every file below these is hashed
  std::optional<std::vector<std::string>> only;        // sync on save: just these paths
  bool hash_all = false;
  // Files over this size are hashed only if the agent already knows their hash (its cache): a
  // pull of a new 10 GB checkpoint need not read it once on the box before the first byte moves.
  std::optional<std::uint64_t> hash_at_most;
  bool sweep = false;  // remove stale ferry temp files first
  std::optional<std::int64_t> page_entries;  // either of these asks for pages
  std::optional<std::int64_t> page_ms;
};
// One row: [path, kind, mode, size, mtimeNs, linkTarget, hash|null] (arrays keep 100k rows small).
struct ListEntry {
  std::string path;
  int kind = 0;  // 0 file, 1 directory, 2 symlink
  std::uint32_t mode = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::string link_target;
  std::optional<Hash128> hash;
};
struct ListResult {
  std::vector<ListEntry> entries;
  std::optional<std::uint64_t> swept;
  std::optional<std::uint64_t> listed;
  std::optional<std::vector<std::string>> other_filesystems;
  std::optional<std::int64_t> cursor;  // set while more pages remain
  bool cancelled = false;
  // The base's sync/state, read right before the walk began (first page of a base's listing):
  // a push that lists anyway needs no sync/state round trip of its own.
  std::optional<StateResult> stamp;
};

// --- sync/read --------------------------------------------------------------------------------
struct ReadParams {
  Where where;
  std::string path;
  std::optional<std::uint64_t> offset;
  std::optional<std::uint64_t> length;
};
struct ReadResult {
  std::string path;
  std::uint64_t offset = 0;
  std::uint64_t raw_size = 0;
  Bytes data;  // zstd frame of raw_size bytes, or the raw_size bytes themselves when `stored`
  bool stored = false;  // the chunk did not compress: sent as it is, no zstd pass on either side
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint32_t mode = 0;
  bool eof = false;
};

// --- sync/readDelta ---------------------------------------------------------------------------
struct ReadDeltaParams {
  Where where;
  std::string path;
  Bytes signature;                   // of the helper's copy
  std::optional<std::vector<Bytes>> fine;  // second level: signatures of the ranges asked for
  bool ranges_only = false;
  std::optional<std::uint64_t> max_delta;
};
struct ReadDeltaResult {
  std::string path;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint32_t mode = 0;
  Hash128 hash{};
  std::optional<std::vector<Range>> ranges;  // rangesOnly: the ranges to sign finely
  bool too_big = false;
  // The delta (zstd frame of delta_size bytes) when neither of the above.
  std::optional<Bytes> delta;
  std::uint64_t delta_size = 0;
  std::uint64_t literal_bytes = 0;
  std::uint64_t copied_bytes = 0;
};

// --- sync/signature ---------------------------------------------------------------------------
struct SignatureParams {
  Where where;
  std::string path;
  std::optional<std::uint32_t> block_size;
  std::optional<std::uint32_t> strong_len;  // with block_size
  std::optional<std::vector<Range>> ranges;  // two-level delta: one signature per range
};
struct SignatureResult {
  std::optional<Bytes> signature;               // whole file
  std::optional<std::vector<Bytes>> signatures;  // per range
};

// --- sync/prepareDelta ------------------------------------------------------------------------
// The helper is making a delta for `path` that keeps its size: the agent starts copying the file
// into a temp file beside it, for sync/applyDelta to write only what differs into.
struct PrepareDeltaParams {
  Where where;
  std::string path;
  std::optional<Expect> expect;  // the file as the helper planned against: else nothing starts
  bool cancel = false;           // the delta will not come: the copy of `path` is deleted now
};
struct PrepareDeltaResult {
  bool started = false;
};

// --- sync/applyDelta --------------------------------------------------------------------------
struct ApplyDeltaParams {
  Where where;
  std::string path;
  FileAttrs attrs;
  std::optional<Expect> expect;
  Bytes delta;  // zstd frame of delta_size bytes
  std::uint64_t delta_size = 0;
};

// --- sync/writeBatch --------------------------------------------------------------------------
struct WriteFile {
  std::string path;
  FileAttrs attrs;
  std::optional<Expect> expect;
  Bytes data;  // zstd frame of attrs.size bytes
  // Set by from_json when this entry is malformed: the agent answers it in its own result
  // entry and writes the rest (a bad file never fails the batch).
  std::optional<std::string> invalid;
};
struct WriteBatchParams {
  Where where;
  std::vector<WriteFile> files;
};

// --- streamed files: fileBegin, filePart, fileAppend, fileCommit, fileAbort -------------------
struct FileBeginParams {
  Where where;
  std::string path;
  FileAttrs attrs;
  std::optional<Expect> expect;
};
struct FileBeginResult {
  std::int64_t handle = 0;
  std::string temp;  // the temp file's name, for sync/filePart on sibling agents ("" from old agents)
};
struct FilePartParams {
  Where where;
  std::string path;
  std::string temp;
  std::uint64_t offset = 0;
  std::uint64_t raw_size = 0;
  Payload data;
  bool stored = false;  // data is the raw_size bytes themselves (they did not compress), not a zstd frame
};
struct FileAppendParams {
  Where where;
  std::int64_t handle = 0;
  std::optional<std::uint64_t> offset;  // absent: after the furthest byte so far (older helpers)
  std::uint64_t raw_size = 0;
  bool placed = false;  // a sibling agent wrote these bytes (sync/filePart); no data
  std::optional<Payload> data;
  bool stored = false;  // as FilePartParams::stored
};
struct FileAppendResult {
  std::uint64_t received = 0;
};
struct FileHandleParams {  // fileCommit, fileAbort
  Where where;
  std::int64_t handle = 0;
};

// --- tree ops: mkdir, symlink, setAttrs, delete -----------------------------------------------
struct MkdirEntry {
  std::string path;
  std::optional<std::uint32_t> mode;  // absent: 0755
};
struct MkdirParams {
  Where where;
  std::vector<MkdirEntry> dirs;
};
struct SymlinkEntry {
  std::string path;
  std::string target;
};
struct SymlinkParams {
  Where where;
  std::vector<SymlinkEntry> links;
};
struct SetAttrsEntry {
  std::string path;
  std::uint32_t mode = 0;
  std::optional<std::int64_t> mtime_ns;  // null for directories and links
};
struct SetAttrsParams {
  Where where;
  std::vector<SetAttrsEntry> entries;
};
struct DeleteParams {
  Where where;
  std::vector<std::string> paths;  // files and links
  std::vector<std::string> dirs;   // deepest first
  std::map<std::string, Expect> expect;  // per file in `paths`
};

// to_json: the wire shape. from_json: validates untrusted input and names the JSON pointer of the
// first bad field (BindingTable turns it into -32602).
#define FERRY_SYNC_WIRE_CODEC(T)                                                              \
  json to_json(const T& v);                                                                   \
  std::optional<DecodeError> from_json(const json& j, T& out, const std::string& ptr = "");
FERRY_SYNC_WIRE_CODEC(Expect)
FERRY_SYNC_WIRE_CODEC(PathResult)
FERRY_SYNC_WIRE_CODEC(PathResults)
FERRY_SYNC_WIRE_CODEC(OkResult)
FERRY_SYNC_WIRE_CODEC(PathOk)
FERRY_SYNC_WIRE_CODEC(StateParams)
FERRY_SYNC_WIRE_CODEC(StateResult)
FERRY_SYNC_WIRE_CODEC(ListParams)
FERRY_SYNC_WIRE_CODEC(ListEntry)
FERRY_SYNC_WIRE_CODEC(ListResult)
FERRY_SYNC_WIRE_CODEC(ReadParams)
FERRY_SYNC_WIRE_CODEC(ReadResult)
FERRY_SYNC_WIRE_CODEC(ReadDeltaParams)
FERRY_SYNC_WIRE_CODEC(ReadDeltaResult)
FERRY_SYNC_WIRE_CODEC(SignatureParams)
FERRY_SYNC_WIRE_CODEC(SignatureResult)
FERRY_SYNC_WIRE_CODEC(PrepareDeltaParams)
FERRY_SYNC_WIRE_CODEC(PrepareDeltaResult)
FERRY_SYNC_WIRE_CODEC(ApplyDeltaParams)
FERRY_SYNC_WIRE_CODEC(WriteFile)
FERRY_SYNC_WIRE_CODEC(WriteBatchParams)
FERRY_SYNC_WIRE_CODEC(FileBeginParams)
FERRY_SYNC_WIRE_CODEC(FileBeginResult)
FERRY_SYNC_WIRE_CODEC(FilePartParams)
FERRY_SYNC_WIRE_CODEC(FileAppendParams)
FERRY_SYNC_WIRE_CODEC(FileAppendResult)
FERRY_SYNC_WIRE_CODEC(FileHandleParams)
FERRY_SYNC_WIRE_CODEC(MkdirEntry)
FERRY_SYNC_WIRE_CODEC(MkdirParams)
FERRY_SYNC_WIRE_CODEC(SymlinkEntry)
FERRY_SYNC_WIRE_CODEC(SymlinkParams)
FERRY_SYNC_WIRE_CODEC(SetAttrsEntry)
FERRY_SYNC_WIRE_CODEC(SetAttrsParams)
FERRY_SYNC_WIRE_CODEC(DeleteParams)
#undef FERRY_SYNC_WIRE_CODEC

// The params that carry file bytes also encode from an rvalue, moving the bytes into the JSON
// instead of copying them: a push's batches and chunks are most of its memory traffic.
json to_json(ApplyDeltaParams&& v);
json to_json(WriteFile&& v);
json to_json(WriteBatchParams&& v);
json to_json(FilePartParams&& v);
json to_json(ReadResult&& v);
json to_json(FileAppendParams&& v);

}  // namespace ferry::protocol::sync_wire

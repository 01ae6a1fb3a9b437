// What the sync engine's push (sync_engine.cpp) and pull (sync_pull.cpp) share: the engine's
// in-memory state, the progress/summary lock of one run, request limits and small wire helpers.
// Internal to ferry_sync_engine: nothing outside helper/sync includes it.
#pragma once

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/file_times.hpp"
#include "common/full_io.hpp"
#include "common/open_file.hpp"
#include "common/unique_fd.hpp"
#include "helper/sync/atomic_file.hpp"
#include "helper/sync/file_index.hpp"
#include "helper/sync/manifest.hpp"
#include "helper/sync/sync_client.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/sync/watcher.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/payload_codec.hpp"
#include "protocol/sync_wire.hpp"

namespace ferry::sync {
namespace engine_parts {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

inline constexpr std::size_t kBatchFiles = 512;
inline constexpr std::uint64_t kBatchBytes = 8u << 20;
inline constexpr std::uint64_t kMaxRequestPayload = 200u << 20;  // under the agent's 256 MiB frame cap
inline constexpr std::uint64_t kReadChunk = 8u << 20;
inline constexpr auto kBigCallTimeout = std::chrono::minutes(5);
// How long the agent walks for one page of a listing (it finishes the entry it is on: one big
// file's hash can make a page longer).
inline constexpr int kListPageMs = 1000;
// A streamed big file: chunks in flight at once (each worker reads, compresses, sends its own),
// the zstd level of its chunks, and that of chunks whose sample does not compress.
inline constexpr unsigned kStreamInFlight = 4;
// On a long link, workers per bulk lane: while one waits a round trip for its part's reply and
// then for the main agent's placed append, the other's part fills the lane's window (one worker
// per lane plus four on the main agent: 1 GiB at 50 ms in 9.5 s; two per lane and none on the
// main agent: 6.3-7.1 s; three: no better).
inline constexpr unsigned kStreamersPerLane = 2;
// On a short link whose lanes save CPU (OpenSSH lanes), workers per lane: four kept one lane busy
// where two left a third of the two cores idle (a 1 GiB push 5.8-6.2 s against 5.9-8.5 s).
inline constexpr unsigned kStreamersPerCpuLane = 4;
inline constexpr int kStreamLevel = 1;
using protocol::kIncompressibleLevel;
// Deltas against the agent's signature go in two levels above this size.
inline constexpr std::uint64_t kTwoLevelAbove = 16u << 20;
inline constexpr std::uint32_t kCoarseBlock = 1u << 20;
inline constexpr std::uint32_t kFineBlock = 1024;
inline constexpr std::size_t kMaxFineRanges = 4096;  // the agent's limit per request
// More paths changed than this since the last push: one walk is cheaper than many stats.
inline constexpr std::size_t kMaxDirtyPaths = 4096;

// Runs `f` when the scope ends, whichever way it ends.
template <typename F>
struct AtExit {
  F f;
  ~AtExit() { f(); }
};
template <typename F>
AtExit(F) -> AtExit<F>;

inline json::binary_t as_binary(std::vector<std::uint8_t> v) { return json::binary_t(std::move(v)); }
inline json::binary_t hash_binary(const Hash128& h) { return as_binary(std::vector<std::uint8_t>(h.begin(), h.end())); }

// Runs jobs on up to `width` threads, so that many agent requests are in flight at once.
inline void run_parallel(std::vector<std::function<void()>>& jobs, unsigned width, const std::function<bool()>& cancel) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      if (cancel && cancel()) return;
      jobs[i]();
    }
  };
  unsigned n = std::max(1u, std::min<unsigned>(width, static_cast<unsigned>(jobs.size())));
  std::vector<std::jthread> threads;
  for (unsigned i = 1; i < n; ++i) threads.emplace_back(worker);
  worker();
}

inline bool under(const std::string& path, const std::string& prefix) {
  return prefix.empty() || prefix == "." || path == prefix ||
         (path.starts_with(prefix) && path.size() > prefix.size() && path[prefix.size()] == '/');
}
inline bool under_any(const std::string& path, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return under(path, p); });
}

// "METHOD 'PATH': MESSAGE" for a request about one path that failed; the agent's own errors
// already start that way, and are not prefixed twice.
inline std::string agent_error(std::string_view method, const std::string& path, const std::string& message) {
  const std::string prefix = std::string(method) + " '" + path + "'";
  return message.starts_with(prefix) ? message : prefix + ": " + message;
}

// The advice for a full disk on the box: "N free of M at PATH; this push writes K ...; free
// space there or map the project to a bigger disk". `needed` 0: not known (a request that was
// refused before any plan, e.g. sync/state creating its record).
std::string no_space_advice(const std::string& where, const json& space, std::uint64_t needed);

// "1.2 MiB": sizes in the summary's line and in messages.
std::string human_bytes(std::uint64_t n);

// The zstd level of one streamed chunk of `data` (kStreamLevel, or kIncompressibleLevel when a
// sample of it does not compress).
int stream_level(const std::uint8_t* data, std::size_t size);

// A file the scan left unhashed, read once for both its bytes and its hash, held to the
// scanner's stability rules (nullopt: changed since the scan or while read); the hash goes into
// `meta` and the index. `check_mode`: the mode is part of "what the scan saw" (not where meta
// carries the box's mode, SyncOptions::local_modes off).
std::expected<std::optional<std::vector<std::uint8_t>>, std::string> read_hashing(const fs::path& root, const std::string& rel,
                                                                                 FileMeta& meta, FileIndex& index, bool check_mode);

// What a (paged) remote listing gave: the entries, or `cancelled` when options.cancelled() turned
// true between pages (the agent was told to drop the walk).
struct RemoteListing {
  TreeState entries;
  bool cancelled = false;
  std::optional<wire::StateResult> stamp;  // the first page's (an agent before 0.1 sends none)
};
// sync/list with `params`, taken page by page (pageEntries, pageMs, then by cursor) so that a big
// remote tree reports listing_progress and stops when cancelled, instead of one request that
// may run for minutes. An agent that does not page answers everything at once. Mount points the
// agent did not enter (another filesystem) are logged.
std::expected<RemoteListing, Error> list_remote_paged(SyncClient& client, protocol::sync_wire::ListParams params,
                                                      const SyncOptions& options);
// "sync/list on ENDPOINT: MESSAGE", of the agent's error's kind.
Error list_failed(remote::Endpoint& endpoint, const protocol::ResponseError& e);

// A whole file in one allocation of its size, read straight into it. (Through read_whole_file,
// a string grown by doubling and then copied, a 1 GiB file cost ~4 GiB of fresh pages zeroed
// and copied: 60% of the helper's CPU for a 1-byte edit.) Errors as read_whole_file's
// ("missing" when it is gone); a file that grows meanwhile is read to its end.
inline std::expected<std::vector<std::uint8_t>, std::string> read_bytes(const fs::path& file) {
  const posix::UniqueFd owned(posix::open_file(file, O_RDONLY));
  if (!owned) return std::unexpected(errno == ENOENT ? std::string("missing") : fmt::format("cannot open {}: {}", file.string(), std::strerror(errno)));
  const int fd = owned.get();
  posix::FileStat st;
  if (const int err = posix::stat_fd(fd, st)) return std::unexpected(fmt::format("cannot stat {}: {}", file.string(), std::strerror(err)));
  std::vector<std::uint8_t> out(static_cast<std::size_t>(st.size));
  const ssize_t got = posix::read_full(fd, out.data(), out.size());
  std::string grown;  // past the stat size: EOF (the usual case) costs one empty read
  if (got < 0 || (static_cast<std::size_t>(got) == out.size() && !posix::read_to_end(fd, grown)))
    return std::unexpected(fmt::format("cannot read {}: {}", file.string(), std::strerror(errno)));
  out.resize(static_cast<std::size_t>(got));
  out.insert(out.end(), grown.begin(), grown.end());
  return out;
}

// What push and pull share while they run: the manifest and the summary, behind one lock.
struct Progress {
  std::mutex mu;
  Manifest* manifest = nullptr;
  SyncSummary* summary = nullptr;
  std::uint64_t done = 0, total = 0;
  const SyncOptions* options = nullptr;

  void advance(std::uint64_t n) {
    std::uint64_t d, t;
    {
      std::lock_guard lock(mu);
      done += n;
      d = done;
      t = total;
    }
    if (options->progress) options->progress(d, t);
  }
  void error(std::string message) {
    std::lock_guard lock(mu);
    summary->errors.push_back(std::move(message));
  }
  // The agent's `space` report of the last write refused for a full disk, and how many were.
  std::optional<json> no_space;
  std::size_t no_space_paths = 0;
  // Notes a refusal for a full disk: `detail` is a result entry or an error's data ({code,
  // space}). False for any other failure.
  bool note_no_space(const json& detail) {
    if (!detail.is_object() || detail.value("code", "") != "no_space") return false;
    std::lock_guard lock(mu);
    no_space = detail.value("space", json::object());
    ++no_space_paths;
    return true;
  }
  bool note_no_space(const protocol::ResponseError& e) { return e.data && note_no_space(*e.data); }
  bool note_no_space(const protocol::sync_wire::PathResult& r) {
    if (r.code != "no_space") return false;
    std::lock_guard lock(mu);
    no_space = r.space.value_or(json::object());
    ++no_space_paths;
    return true;
  }
  // A file that vanished between the scan and the read is not a failure (the user deleted or
  // renamed it): like a file changed mid-read, the next sync settles it, as rsync's "vanished".
  void read_failed(const std::string& path, const std::string& why) {
    std::lock_guard lock(mu);
    if (why == "missing") summary->unstable.push_back(path);
    else summary->errors.push_back(fmt::format("read '{}': {}", path, why));
  }
};

}  // namespace engine_parts

// Why a lagging persisted manifest is safe: it is written as one snapshot of (entries,
// remote_epoch, remote_generation), atomically. Every ferry write bumps the agent's generation
// and the helper records a generation only when the count it observed equals its own requests
// (nobody else wrote in between) and only together with the entries those requests produced.
// A snapshot older than the remote therefore carries an older generation than the agent's, so
// whoever loads it lists the remote and plans as without a manifest's promise: extra work,
// never a skipped file. Conflicts never depend on the manifest being current either: every
// write and delete carries the size+mtime it expects and the agent refuses a mismatch.
struct SyncEngine::State {
  std::mutex mu;  // held for a whole push/pull; the persister snapshots between them
  std::optional<Manifest> manifest;
  std::optional<FileIndex> index;
  std::optional<IgnoreMatcher> ignore;  // reused by saves; rebuilt by full pushes
  std::uint64_t manifest_version = 0, manifest_saved = 0;
  bool index_dirty = false;
  // The watched no-op (watch_local_tree): `known_local` is the local tree as a push read it,
  // and equals the tree on disk up to the watcher's queue position at that read. Empty = no
  // such promise (no watcher, a walk with unstable files, a watcher error): walk.
  std::unique_ptr<TreeWatcher> watcher;
  std::optional<TreeState> known_local;
  // The last watched full push planned nothing, against this manifest version, with these
  // deletes: the plan is a pure function of (local tree, manifest, options), so a push that
  // read nothing local ("none"), finds the manifest at that version and is trusted by the
  // remote's generation would plan the same nothing; it skips plan_push (0.1 s at 100k files).
  struct EmptyPlan {
    std::uint64_t manifest_version;
    DeleteMode deletes;
    std::size_t unchanged;
  };
  std::optional<EmptyPlan> empty_plan;
  // A walk done by prepare_push for the next push, with the options it was made for.
  struct PreparedScan {
    ScanResult scan;
    std::uint64_t stream_above;
    bool dry_run;
  };
  std::optional<PreparedScan> prepared;

  std::mutex write_mu;    // serialises the file writes (taken before mu, never while holding it)
  std::mutex persist_mu;  // guards the flags below
  std::condition_variable persist_cv;
  bool pending = false, stop = false;
  std::chrono::milliseconds delay{300};
  std::thread persister;
};

}  // namespace ferry::sync

// The sync engine: see sync_engine.hpp. The order of remote steps follows docs/sync.md
// ("For the transfer pipeline"): replace, then mkdirs, files (whole batches and deltas),
// symlinks and metadata in flight together, then deletes; the manifest records each
// acknowledged write.
#include "helper/sync/sync_engine.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <zstd.h>

#include "helper/remote/endpoint.hpp"
#include "helper/sync/atomic_file.hpp"
#include "helper/sync/file_index.hpp"
#include "helper/sync/project_lock.hpp"
#include "helper/sync/manifest.hpp"
#include "helper/sync/scanner.hpp"
#include "helper/sync/watcher.hpp"
#include "helper/sync/sync_engine_state.hpp"
#include "protocol/delta/delta.hpp"

namespace ferry::sync {
namespace {

using namespace engine_parts;

// `entries` updated with a re-read of `dirty`: a path the re-read did not find (gone, now
// ignored, now behind a symlink) leaves, and so does everything under it unless it is still a
// directory (a directory's own event, e.g. a chmod, says nothing about its children, whose
// changes come as their own events).
void apply_dirty(TreeState& entries, const std::vector<std::string>& dirty, TreeState&& reread) {
  for (const auto& p : dirty) {
    auto now = reread.find(p);
    const bool still_dir = now != reread.end() && now->second.kind == EntryKind::dir;
    entries.erase(p);
    if (still_dir) continue;
    const std::string prefix = p + "/";
    for (auto it = entries.lower_bound(prefix); it != entries.end() && it->first.starts_with(prefix);) it = entries.erase(it);
  }
  for (auto& [p, m] : reread) entries.insert_or_assign(p, std::move(m));
}

// Hashes these paths of a walk now (a re-read with the scanner's stability checks), in place; the
// ones caught mid-change join `scanned.unstable` and are returned.
std::expected<std::vector<std::string>, std::string> hash_now(const fs::path& root, const IgnoreMatcher& ignore,
                                                              FileIndex& index, ScanResult& scanned,
                                                              const std::vector<std::string>& paths) {
  if (paths.empty()) return std::vector<std::string>{};
  auto part = scan_paths(root, ignore, &index, paths);
  if (!part) return std::unexpected("scan " + root.string() + ": " + part.error());
  apply_dirty(scanned.entries, paths, std::move(part->entries));
  scanned.unstable.insert(scanned.unstable.end(), part->unstable.begin(), part->unstable.end());
  scanned.stats.hashed += part->stats.hashed;
  return std::move(part->unstable);
}

std::string human_bytes(std::uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  if (n < (1u << 20)) return fmt::format("{:.1f} KiB", n / 1024.0);
  if (n < (1u << 30)) return fmt::format("{:.1f} MiB", n / 1048576.0);
  return fmt::format("{:.2f} GiB", n / 1073741824.0);
}

// The zstd level of one streamed chunk: kStreamLevel, unless a 64 KiB sample of it does not
// compress (media, archives, checkpoints of random-looking floats), where zstd's fastest
// level still makes a valid frame for the agent at near-copy speed.
int stream_level(const std::uint8_t* data, std::size_t size) {
  constexpr std::size_t kSample = 64u << 10;
  if (size < 4 * kSample) return kStreamLevel;
  std::vector<std::uint8_t> out(ZSTD_compressBound(kSample));
  const std::size_t n = ZSTD_compress(out.data(), out.size(), data, kSample, 1);
  return !ZSTD_isError(n) && n * 100 > kSample * 97 ? kIncompressibleLevel : kStreamLevel;
}

// A file the scan left unhashed (new to the remote, so it goes whole), read once for both its
// bytes and its hash. Held to the scanner's rules: still what the scan saw (size, mtime,
// mode) and unchanged while read (inode, size, mtime, ctime), else nullopt (unstable: the next
// sync sends it). The hash goes into `meta` and the index, as the scanner's would.
std::expected<std::optional<std::vector<std::uint8_t>>, std::string> read_hashing(const fs::path& root, const std::string& rel,
                                                                                 FileMeta& meta, FileIndex& index) {
  const std::int64_t hashed_at = now_ns();
  const int fd = ::open((root / rel).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ELOOP) return std::unexpected(std::string("missing"));
    return std::unexpected(fmt::format("cannot open {}: {}", rel, std::strerror(errno)));
  }
  const AtExit close_fd{[fd] { ::close(fd); }};
  auto mtime_of = [](const struct stat& st) { return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec; };
  auto ctime_of = [](const struct stat& st) { return static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec; };
  struct stat before {}, after {};
  if (::fstat(fd, &before) != 0) return std::unexpected(fmt::format("cannot stat {}: {}", rel, std::strerror(errno)));
  if (!S_ISREG(before.st_mode) || static_cast<std::uint64_t>(before.st_size) != meta.size || mtime_of(before) != meta.mtime_ns ||
      static_cast<std::uint32_t>(before.st_mode & 07777) != meta.mode)
    return std::nullopt;
  std::vector<std::uint8_t> out(meta.size);
  std::size_t got = 0;
  for (;;) {
    std::uint8_t probe;  // past the size: must be EOF
    const bool full = got == out.size();
    const ssize_t n = full ? ::read(fd, &probe, 1) : ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(fmt::format("cannot read {}: {}", rel, std::strerror(errno)));
    if (n == 0) break;
    if (full) return std::nullopt;  // grew while read
    got += static_cast<std::size_t>(n);
  }
  if (got != out.size() || ::fstat(fd, &after) != 0 || after.st_ino != before.st_ino || after.st_size != before.st_size ||
      mtime_of(after) != mtime_of(before) || ctime_of(after) != ctime_of(before))
    return std::nullopt;
  meta.hash = delta::hash128(out);
  index.store(rel, IndexKey{meta.size, meta.mtime_ns, meta.mode, static_cast<std::uint64_t>(after.st_ino)}, *meta.hash, hashed_at);
  return out;
}

}  // namespace

std::vector<std::uint8_t> zstd_compress(const std::uint8_t* data, std::size_t size, int level) {
  // One context per thread: a fresh one per call (ZSTD_compress) costs its table setup for
  // every small file, a large share of the CPU of a batch of tiny files.
  thread_local std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), &ZSTD_freeCCtx);
  std::vector<std::uint8_t> out(ZSTD_compressBound(size));
  std::size_t n = cctx ? ZSTD_compressCCtx(cctx.get(), out.data(), out.size(), data, size, level)
                       : ZSTD_compress(out.data(), out.size(), data, size, level);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

std::expected<std::vector<std::uint8_t>, std::string> zstd_decompress(const std::uint8_t* data, std::size_t size,
                                                                      std::uint64_t expected_size) {
  if (expected_size > kMaxRequestPayload) return std::unexpected("chunk larger than the limit");
  unsigned long long claimed = ZSTD_getFrameContentSize(data, size);
  if (claimed == ZSTD_CONTENTSIZE_ERROR) return std::unexpected("not a zstd frame");
  if (claimed != ZSTD_CONTENTSIZE_UNKNOWN && claimed != expected_size) return std::unexpected("zstd frame size mismatch");
  std::vector<std::uint8_t> out(expected_size);
  std::size_t n = ZSTD_decompress(out.data(), out.size(), data, size);
  if (ZSTD_isError(n) || n != expected_size) return std::unexpected("zstd frame does not decompress to the declared size");
  return out;
}

std::string engine_parts::no_space_advice(const std::string& where, const json& space, std::uint64_t needed) {
  const std::string path = space.value("path", std::string("the mapping root"));
  std::string free = space.contains("availableBytes")
                         ? fmt::format("{} free of {}", human_bytes(space.value("availableBytes", std::uint64_t{0})),
                                       human_bytes(space.value("totalBytes", std::uint64_t{0})))
                         : std::string("free space unknown");
  if (space.contains("availableInodes") && space.value("availableInodes", std::uint64_t{1}) == 0) free += ", no inodes left";
  std::string out = fmt::format("no space left on {} at {}: {}", where, path, free);
  // Each file is written whole into a temp copy beside the old one and renamed over it: the old
  // version stays until the new one is complete, so a push needs room for what it writes.
  if (needed > 0) out += fmt::format("; this push writes {} (each file as a whole new copy before it replaces the old one)", human_bytes(needed));
  out += fmt::format(". Files that did not fit keep their old version. Free space there (old checkpoints, caches: "
                     "`du -sh {}/* | sort -h`) or map the project to a bigger disk in ferry.json, then sync again",
                     path);
  return out;
}

std::expected<RemoteListing, std::string> engine_parts::list_remote_paged(remote::Endpoint& endpoint, json params,
                                                                        const SyncOptions& o) {
  const std::string base = params.value("base", "");
  const std::string source = params.value("source", "");
  // A continuation names the same place as the first page (a read-only source or a base).
  auto where = [&] { return source.empty() ? json{{"base", base}} : json{{"source", source}}; };
  params["pageEntries"] = std::max<std::size_t>(o.list_page_entries, 1);
  params["pageMs"] = kListPageMs;
  RemoteListing out;
  std::uint64_t listed = 0;
  std::size_t mounts_logged = 0;
  for (;;) {
    auto page = endpoint.call("sync/list", std::move(params), kBigCallTimeout);
    if (!page) return std::unexpected("sync/list on " + endpoint.description() + ": " + page.error().message);
    for (auto& [path, meta] : from_listing(*page)) out.entries.insert_or_assign(path, std::move(meta));
    listed = page->value("listed", listed + page->at("entries").size());
    if (auto m = page->find("otherFilesystems"); m != page->end() && m->is_array())
      for (const auto& path : *m)
        if (path.is_string() && mounts_logged++ < 20)
          spdlog::warn("sync: {} on {} is another filesystem (a mount point): listed as a directory, not walked",
                       path.get<std::string>(), endpoint.description());
    if (o.listing_progress) o.listing_progress(listed);
    auto cursor = page->find("cursor");
    if (cursor == page->end() || !cursor->is_number_integer()) return out;
    if (o.cancelled && o.cancelled()) {
      // The agent frees the walk's directories now rather than when newer listings push it out.
      json cancel = where();
      cancel["cursor"] = *cursor;
      cancel["cancel"] = true;
      (void)endpoint.call("sync/list", std::move(cancel),
                          std::chrono::seconds(30));
      out.cancelled = true;
      return out;
    }
    params = where();
    params["cursor"] = *cursor;
  }
}

std::string SyncSummary::one_line() const {
  return fmt::format("{}{}{} files sent, {} deleted, {} conflicts, {} literal, {} matched, {} on the wire, {:.2f} s{}{}",
                     cancelled ? "(cancelled) " : "", dry_run ? "(dry run) " : "", files_sent, files_deleted, conflicts.size(),
                     human_bytes(bytes_literal), human_bytes(bytes_matched), human_bytes(bytes_on_wire), seconds,
                     errors.empty() ? "" : fmt::format(", {} errors", errors.size()),
                     held_deletes.empty() ? "" : fmt::format(", {} deletes held (confirm with --yes)", held_deletes.size()));
}


SyncEngine::SyncEngine(remote::Endpoint& endpoint, SyncTarget target)
    : endpoint_(endpoint), target_(std::move(target)), state_(std::make_unique<State>()) {
  state_->persister = std::thread([this] {
    State& st = *state_;
    std::unique_lock lock(st.persist_mu);
    while (true) {
      st.persist_cv.wait(lock, [&] { return st.pending || st.stop; });
      if (st.stop) return;
      // Coalesce: a burst of saves becomes one write.
      st.persist_cv.wait_for(lock, st.delay, [&] { return st.stop; });
      if (st.stop) return;
      st.pending = false;
      lock.unlock();
      persist_now();
      lock.lock();
    }
  });
}

SyncEngine::~SyncEngine() { finish(); }

void SyncEngine::finish() {
  {
    std::lock_guard lock(state_->persist_mu);
    state_->stop = true;
  }
  state_->persist_cv.notify_all();
  if (state_->persister.joinable()) state_->persister.join();
  persist_now();
}

void SyncEngine::set_persist_delay(std::chrono::milliseconds delay) {
  std::lock_guard lock(state_->persist_mu);
  state_->delay = delay;
}

void SyncEngine::persist_now() {
  State& st = *state_;
  std::lock_guard write_lock(st.write_mu);
  const auto t0 = Clock::now();
  std::optional<std::string> manifest_text;
  std::uint64_t version = 0;
  bool index_dirty = false;
  {
    // Serialised under the lock: writing the JSON (~4 ms at 20k files) is cheaper than the
    // copy of the map it used to take here (~10 ms), so a save waits less, not more.
    std::lock_guard lock(st.mu);
    if (st.manifest && st.manifest_version != st.manifest_saved) {
      manifest_text = manifest_to_json(*st.manifest);
      version = st.manifest_version;
    }
    index_dirty = st.index && st.index_dirty;
    st.index_dirty = false;
  }
  if (manifest_text) {
    if (auto ok = write_file_atomically(manifest_path(), *manifest_text); !ok) {
      spdlog::warn("sync: cannot save the manifest: {}", ok.error());
    } else {
      std::lock_guard lock(st.mu);
      st.manifest_saved = version;
    }
  }
  if (index_dirty) {
    // FileIndex locks itself; a scan storing into it meanwhile is fine (it is only a cache).
    if (auto ok = st.index->save(default_index_path(target_.local_root)); !ok) spdlog::warn("sync: cannot save the index: {}", ok.error());
  }
  if (manifest_text || index_dirty)
    spdlog::debug("sync: state saved in {:.1f} ms", std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
}

std::expected<void, std::string> SyncEngine::watch_local_tree() {
  std::lock_guard lock(state_->mu);
  if (state_->watcher) return {};
  auto w = TreeWatcher::open(target_.local_root, target_.exclude);
  if (!w) return std::unexpected(w.error());
  state_->watcher = std::move(*w);
  state_->known_local.reset();  // what was read before the watch began proves nothing
  return {};
}

TreeWatcher* SyncEngine::watcher_for_test() {
  std::lock_guard lock(state_->mu);
  return state_->watcher.get();
}

fs::path SyncEngine::manifest_path() const {
  return default_manifest_path(target_.local_root, target_.host, target_.remote_root);
}

std::expected<SyncSummary, std::string> SyncEngine::push(const SyncOptions& o) {
  auto lock = ProjectLock::acquire(target_.local_root, o.waiting, o.cancelled);
  if (!lock) return std::unexpected(lock.error());
  auto result = push_locked(o);
  {
    std::lock_guard lock(state_->persist_mu);
    state_->pending = true;
  }
  state_->persist_cv.notify_all();
  return result;
}

// A full push's walk. It hashes only what a plan may compare: files ferry wrote before and files
// big enough to stream (fileBegin announces the hash). The rest, new to the remote unless the
// listing says otherwise (then they are hashed before the plan), are hashed by the batch that
// reads them for sending: one read of each new file instead of two.
std::expected<ScanResult, std::string> SyncEngine::walk_for_push(State& st, const SyncOptions& o) {
  ScanOptions scan_options;
  if (!o.dry_run) {
    const auto& written = st.manifest->entries;
    const std::uint64_t stream_above = o.stream_above;
    scan_options.hash_if = [&written, stream_above](const std::string& path, std::uint64_t size) {
      return size > stream_above || written.contains(path);
    };
  }
  return scan_tree(target_.local_root, *st.ignore, &*st.index, scan_options);
}

// The hash index: a cache, so an unreadable one means rehashing.
void SyncEngine::load_index(State& st) {
  if (st.index) return;
  auto index = FileIndex::load(default_index_path(target_.local_root));
  if (!index) spdlog::warn("sync: index unreadable ({}); rehashing everything", index.error());
  st.index.emplace(index ? std::move(*index) : FileIndex{});
}

// The hash index and the manifest (unreadable is an error).
std::expected<void, std::string> SyncEngine::load_local_state(State& st) {
  load_index(st);
  if (!st.manifest) {
    auto loaded = load_manifest(manifest_path());
    if (!loaded) return std::unexpected(loaded.error());
    st.manifest = std::move(*loaded);
  }
  return {};
}

void SyncEngine::prepare_push(const SyncOptions& o) {
  std::lock_guard state_lock(state_->mu);
  State& st = *state_;
  if (st.watcher || !o.only_paths.empty()) return;
  st.prepared.reset();
  // The manifest is JSON (13 MB, ~0.25 s to parse at 100k files): it loads beside the walk. The
  // walk therefore hashes cache misses only over stream_above, and the misses ferry wrote before
  // are hashed once the manifest is in, which hashes exactly what walk_for_push would.
  std::expected<Manifest, std::string> manifest{Manifest{}};
  std::jthread loading;
  if (!st.manifest) loading = std::jthread([&] { manifest = load_manifest(manifest_path()); });
  load_index(st);
  st.ignore = IgnoreMatcher::for_tree(target_.local_root, target_.exclude);
  spdlog::debug("sync: scan begins (prepared)");
  ScanOptions scan_options;
  if (!o.dry_run) {
    const std::uint64_t stream_above = o.stream_above;
    scan_options.hash_if = [stream_above](const std::string&, std::uint64_t size) { return size > stream_above; };
  }
  auto scanned = scan_tree(target_.local_root, *st.ignore, &*st.index, scan_options);
  if (loading.joinable()) loading.join();
  if (!scanned || !manifest) return;  // the push walks again and reports the error
  if (!st.manifest) st.manifest = std::move(*manifest);
  std::vector<std::string> written;
  for (const auto& [p, m] : scanned->entries)
    if (m.kind == EntryKind::file && !m.hash && st.manifest->entries.contains(p)) written.push_back(p);
  if (!hash_now(target_.local_root, *st.ignore, *st.index, *scanned, written)) return;
  spdlog::debug("sync: scan done (prepared), {} entries, {} hashed", scanned->entries.size(), scanned->stats.hashed);
  st.prepared = State::PreparedScan{std::move(*scanned), o.stream_above, o.dry_run};
}

std::expected<SyncSummary, std::string> SyncEngine::push_locked(const SyncOptions& o) {
  const auto t0 = Clock::now();
  SyncSummary summary;
  summary.dry_run = o.dry_run;
  const fs::path& root = target_.local_root;
  std::lock_guard state_lock(state_->mu);
  State& st = *state_;
  const bool save = !o.only_paths.empty();
  // A walk prepare_push made for this push (its rules, index and manifest are the ones loaded).
  std::optional<State::PreparedScan> prepared = std::move(st.prepared);
  st.prepared.reset();
  if (prepared && (save || st.watcher || prepared->stream_above != o.stream_above || prepared->dry_run != o.dry_run))
    prepared.reset();
  // A save of an ignore file changes what the rules say; any full push re-reads them all.
  const bool ignore_changed = std::any_of(o.only_paths.begin(), o.only_paths.end(), [](const std::string& p) {
    return p.ends_with(".gitignore") || p.ends_with(".ferryignore");
  });
  if (!st.ignore || (!save && !prepared) || ignore_changed) st.ignore = IgnoreMatcher::for_tree(root, target_.exclude);
  const IgnoreMatcher& ignore = *st.ignore;
  const IgnoreMatcher protect = IgnoreMatcher::from_patterns(target_.protect);

  // 1. The local side.
  if (auto loaded = load_local_state(st); !loaded) return std::unexpected(loaded.error());
  // A full push of a watched engine first takes every event the kernel has queued. Why that
  // cannot miss a save made before the request: inotify queues a file's event inside the
  // syscall that changed it (write/close/rename/unlink), before that syscall returns to the
  // editor, and the editor only then tells the IDE, which only then sends sync/push. So every
  // change that happened before this push began is in the queue when it is read here, and a
  // change made after the read is still queued for the next push (it may or may not be in this
  // push's read of the file too, which is harmless). Every doubt walks the whole tree: no
  // promise yet, a queue overflow, an ignore file changed, a directory moved away, too many
  // changes, a watcher error; --force and mirror deletes keep their full walk.
  const bool watched = !save && st.watcher != nullptr;
  std::optional<WatchBatch> batch;
  if (watched) {
    auto taken = st.watcher->take_pending();
    if (!taken) {
      summary.full_walk_reason = "watcher failed: " + taken.error();
      spdlog::warn("sync: {}; walking the tree and starting a new watch", summary.full_walk_reason);
      st.watcher.reset();
      st.known_local.reset();
      // The new watch begins before the walk, so a change during the walk is queued for the next.
      if (auto w = TreeWatcher::open(root, target_.exclude); w) st.watcher = std::move(*w);
      else spdlog::warn("sync: no watch of {}: {}; every push walks the tree", root.string(), w.error());
    } else {
      batch = std::move(*taken);
    }
  }
  std::expected<ScanResult, std::string> scanned{ScanResult{}};
  bool from_watch = false;
  if (batch && !batch->rescan && st.known_local && !o.force && o.deletes != DeleteMode::mirror &&
      batch->paths.size() <= kMaxDirtyPaths) {
    scanned->entries = std::move(*st.known_local);
    st.known_local.reset();
    if (batch->paths.empty()) {
      summary.local_scan = "none";
      from_watch = true;
    } else if (auto part = scan_paths(root, ignore, &*st.index, batch->paths); part) {
      apply_dirty(scanned->entries, batch->paths, std::move(part->entries));
      scanned->unstable = std::move(part->unstable);
      scanned->issues = std::move(part->issues);
      scanned->stats = part->stats;
      summary.local_scan = "paths";
      from_watch = true;
    } else {
      summary.full_walk_reason = "re-reading the changed paths failed: " + part.error();
    }
  } else if (watched && summary.full_walk_reason.empty()) {
    summary.full_walk_reason = batch && batch->rescan                  ? batch->reason
                               : !st.known_local                        ? "no complete read since the watch began"
                               : o.force || o.deletes == DeleteMode::mirror ? "forced or mirror push"
                                                                        : fmt::format("{} paths changed", batch->paths.size());
  }
  st.known_local.reset();  // taken above or stale: the events it needed are consumed
  if (prepared) {
    scanned = std::move(prepared->scan);
    summary.local_scan = "prepared";
  } else if (!from_watch) {
    spdlog::debug("sync: scan begins");
    scanned = save ? scan_paths(root, ignore, &*st.index, o.only_paths) : walk_for_push(st, o);
    if (!scanned) return std::unexpected("scan " + root.string() + ": " + scanned.error());
    spdlog::debug("sync: scan done, {} entries, {} hashed", scanned->entries.size(), scanned->stats.hashed);
  }
  // The read stands for the tree until the queue position taken above, unless some file was
  // caught mid-change (left out of the entries, so it would look deleted).
  AtExit keep_read{[&] {
    if (st.watcher && !save && scanned && scanned->unstable.empty()) st.known_local = std::move(scanned->entries);
  }};
  const std::size_t indexed = st.index->size();
  if (!save && !from_watch) st.index->retain(scanned->entries);
  // A save's one new hash is not worth rewriting the whole index for (it is a cache: lost, the
  // file is hashed again); the next full push persists it.
  if ((!save && scanned->stats.hashed > 0) || st.index->size() != indexed) st.index_dirty = true;
  summary.unstable = scanned->unstable;
  const TreeState& local = scanned->entries;

  // 2. What ferry last wrote (kept in memory, loaded above), 3. whether anyone wrote since, and
  // if so, what is there now.
  Manifest* manifest = &*st.manifest;
  manifest->remote_root = target_.remote_root;
  const std::string& base = target_.remote_base;
  std::string start_epoch;
  std::uint64_t start_generation = 0;
  bool stamp_known = false;
  if (auto stamp = endpoint_.call("sync/state", json{{"base", base}}); stamp) {
    start_epoch = stamp->value("epoch", "");
    start_generation = stamp->value("generation", std::uint64_t{0});
    stamp_known = true;
  } else if (stamp.error().code != protocol::error_code::kMethodNotFound) {
    if (stamp.error().data && stamp.error().data->value("code", "") == "no_space")
      return std::unexpected(no_space_advice(endpoint_.description(), stamp.error().data->value("space", json::object()), 0));
    return std::unexpected("sync/state on " + endpoint_.description() + ": " + stamp.error().message);
  }
  // Nobody wrote since the manifest was last complete: plan against it, list nothing. A file
  // changed behind ferry's back that this push writes or deletes is still caught, by the
  // agent, from the expected size+mtime every write carries. Mirror deletes need to see
  // remote-only files and --force needs the remote's current state: both list.
  const bool trusted = stamp_known && !start_epoch.empty() && manifest->remote_epoch == start_epoch &&
                       manifest->remote_generation == start_generation && !manifest->entries.empty();
  const bool fast = trusted && !o.force && o.deletes != DeleteMode::mirror;
  spdlog::debug("sync: remote state read ({})", fast ? "manifest trusted" : "listing");
  TreeState remote;
  bool listing_cancelled = false;  // cancelled between the pages of the remote listing
  auto list_remote = [&]() -> std::expected<void, std::string> {
    json known = json::array();
    if (!save) {
      for (const auto& [p, m] : manifest->entries) known.push_back(p);
    } else {
      for (const auto& p : o.only_paths)
        if (manifest->entries.contains(p)) known.push_back(p);
    }
    json list_params{{"base", base}, {"known", std::move(known)}, {"sweep", !o.dry_run && !save}};
    if (save) {
      list_params["only"] = o.only_paths;  // sync on save: a few stats, not a walk
      auto listed = endpoint_.call("sync/list", std::move(list_params), kBigCallTimeout);
      if (!listed) return std::unexpected("sync/list on " + endpoint_.description() + ": " + listed.error().message);
      remote = from_listing(*listed);
    } else {
      auto listed = list_remote_paged(endpoint_, std::move(list_params), o);
      if (!listed) return std::unexpected(listed.error());
      if (listed->cancelled) {
        listing_cancelled = true;
        return {};
      }
      remote = std::move(listed->entries);
    }
    // Files the manifest describes differently but that match the local size: most likely
    // written by a push whose manifest never reached the disk (a crash). Their hashes tell
    // "ours, already there" (adopted) from "changed behind ferry's back" (conflict).
    json verify = json::array();
    for (const auto& [p, r] : remote) {
      if (r.kind != EntryKind::file || r.hash) continue;
      auto m = manifest->entries.find(p);
      auto l = local.find(p);
      if (m != manifest->entries.end() && l != local.end() && l->second.kind == EntryKind::file &&
          l->second.size == r.size && !remote_matches_manifest(r, m->second))
        verify.push_back(p);
    }
    if (!verify.empty()) {
      auto hashed = endpoint_.call("sync/list", json{{"base", base}, {"known", json::array()}, {"only", std::move(verify)}},
                                   kBigCallTimeout);
      if (!hashed) return std::unexpected("sync/list on " + endpoint_.description() + ": " + hashed.error().message);
      for (auto& [p, h] : from_listing(*hashed)) {
        auto it = remote.find(p);
        if (h.hash && it != remote.end() && it->second.size == h.size && it->second.mtime_ns == h.mtime_ns) it->second.hash = h.hash;
      }
    }
    return {};
  };
  // A full fast push plans straight against the manifest and copies it (as the remote state the
  // jobs check against, and as a snapshot nobody records into) only when there is work; a save
  // copies just its own entries. A no-op of a large tree copies nothing.
  const bool alias_manifest = fast && !save;
  Manifest plan_manifest;
  plan_manifest.remote_root = manifest->remote_root;
  if (save) {
    for (const auto& p : o.only_paths)
      if (auto it = manifest->entries.find(p); it != manifest->entries.end()) {
        plan_manifest.entries.insert(*it);
        if (fast) remote.insert(*it);
      }
  } else if (!fast) {
    plan_manifest = *manifest;
  }
  // Local files the walk left unhashed but the remote has as files: the plan compares their
  // content (adopt, conflict or delta), so they are read now, as a save would read them.
  // (Not only after this push's walk: a watched engine's kept read may hold a file an earlier
  // push left unhashed and then failed to send.)
  auto hash_listed = [&]() -> std::expected<void, std::string> {
    std::vector<std::string> paths;
    for (const auto& [p, m] : scanned->entries)
      if (m.kind == EntryKind::file && !m.hash)
        if (auto r = remote.find(p); r != remote.end() && r->second.kind == EntryKind::file) paths.push_back(p);
    if (paths.empty()) return {};
    auto unstable = hash_now(root, ignore, *st.index, *scanned, paths);
    if (!unstable) return std::unexpected(unstable.error());
    summary.unstable.insert(summary.unstable.end(), unstable->begin(), unstable->end());
    st.index_dirty = true;
    return {};
  };
  // A push cancelled while the remote was listed has planned and sent nothing.
  auto cancelled_while_listing = [&] {
    summary.cancelled = true;
    summary.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return summary;
  };
  if (!fast) {
    if (auto ok = list_remote(); !ok) return std::unexpected(ok.error());
    if (listing_cancelled) return cancelled_while_listing();
    if (auto ok = hash_listed(); !ok) return std::unexpected(ok.error());
    spdlog::debug("sync: remote listed, {} entries", remote.size());
  }
  auto only_saved = [&](TreeState& t) {
    // Sync on save: the plan sees only the saved paths, so nothing else looks deleted.
    if (!save) return;
    std::erase_if(t, [&](const auto& kv) {
      return std::none_of(o.only_paths.begin(), o.only_paths.end(), [&](const std::string& p) { return kv.first == p; });
    });
  };
  only_saved(remote);
  only_saved(plan_manifest.entries);

  // 4. The plan.
  PlanOptions popt;
  popt.deletes = o.deletes;
  popt.protect = &protect;
  popt.ignore = &ignore;
  popt.skip.insert(scanned->unstable.begin(), scanned->unstable.end());
  popt.overwrite_conflicts = o.force;
  // A save sees only its own paths; its deletes are weighed against the whole tree (an estimate
  // that counts directories too, kept O(1) so a save stays fast).
  if (save) popt.tree_files = manifest->entries.size();
  const bool reuse_empty = alias_manifest && summary.local_scan == "none" && !o.force && st.empty_plan &&
                           st.empty_plan->manifest_version == st.manifest_version && st.empty_plan->deletes == o.deletes;
  Plan plan = reuse_empty      ? Plan{}
              : alias_manifest ? plan_push(local, *manifest, manifest->entries, popt)
                               : plan_push(local, plan_manifest, remote, popt);
  if (reuse_empty) plan.unchanged = st.empty_plan->unchanged;
  if (alias_manifest && !plan.nothing_to_do()) {
    remote = manifest->entries;
    plan_manifest = *manifest;
  }
  // The manifest records symlinks and directories with local mtimes, which are no precondition
  // the agent can check: a fast plan that would overwrite or delete one lists first.
  auto needs_listing = [&](const Plan& pl) {
    if (!pl.replace.empty()) return true;
    auto not_file = [&](const std::string& path) {
      auto it = remote.find(path);
      return it != remote.end() && it->second.kind != EntryKind::file;
    };
    for (const auto* v : {&pl.send_whole, &pl.send_delta})
      for (const auto& t : *v)
        if (not_file(t.path)) return true;
    return std::any_of(pl.deletes.begin(), pl.deletes.end(), not_file) ||
           std::any_of(pl.held_deletes.begin(), pl.held_deletes.end(), not_file);
  };
  if (fast && needs_listing(plan)) {
    if (auto ok = list_remote(); !ok) return std::unexpected(ok.error());
    if (listing_cancelled) return cancelled_while_listing();
    if (auto ok = hash_listed(); !ok) return std::unexpected(ok.error());
    popt.skip.insert(scanned->unstable.begin(), scanned->unstable.end());
    only_saved(remote);
    plan = plan_push(local, plan_manifest, remote, popt);
  }
  if (plan.needs_confirmation && o.confirm_mass_delete &&
      o.confirm_mass_delete(plan.confirmation_reason, plan.held_deletes.size() + plan.held_rmdirs.size())) {
    popt.confirmed_mass_delete = true;
    plan = plan_push(local, plan_manifest, remote, popt);
  }
  st.empty_plan.reset();
  if (alias_manifest && st.watcher && scanned->unstable.empty() && plan.nothing_to_do() && plan.held_rmdirs.empty() &&
      plan.adopted.empty() && plan.forget.empty() && plan.protected_skipped.empty() && !plan.needs_confirmation)
    st.empty_plan = State::EmptyPlan{st.manifest_version, o.deletes, plan.unchanged};
  spdlog::debug("sync: planned: {} whole, {} delta, {} mkdirs", plan.send_whole.size(), plan.send_delta.size(), plan.mkdirs.size());
  summary.conflicts = plan.conflicts;
  summary.held_deletes = plan.held_deletes;
  summary.unchanged = plan.unchanged;
  if (o.dry_run) {
    summary.files_sent = plan.send_whole.size() + plan.send_delta.size() + plan.symlinks.size();
    summary.files_deleted = plan.deletes.size();
    summary.dirs_made = plan.mkdirs.size();
    summary.metadata_only = plan.metadata.size();
    summary.bytes_literal = plan.whole_bytes();
    summary.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return summary;
  }

  // Requests that change the remote, counted so the end of the push can tell whether the
  // agent's generation moved by exactly ours.
  std::atomic<std::uint64_t> mutations{0};
  auto mutate = [&](std::string_view method, json params,
                    std::chrono::milliseconds timeout = remote::kDefaultCallTimeout) {
    ++mutations;
    return endpoint_.call(method, std::move(params), timeout);
  };
  Progress prog;
  prog.manifest = manifest;
  prog.summary = &summary;
  prog.options = &o;
  prog.total = plan.whole_bytes();
  for (const auto& t : plan.send_delta) prog.total += t.local.size;
  const fs::path cache_dir = root / ".ferry" / "sent";
  auto record = [&](const std::string& path, const FileMeta& meta) {
    std::lock_guard lock(prog.mu);
    manifest->record(path, meta);
  };
  auto results_of = [&](const char* method, const std::expected<json, protocol::ResponseError>& reply,
                        const std::function<void(const std::string&)>& on_ok) {
    if (!reply) {
      prog.note_no_space(reply.error());
      prog.error(fmt::format("{}: {}", method, reply.error().message));
      return;
    }
    for (const auto& r : reply->value("results", json::array())) {
      const std::string path = r.value("path", "");
      if (r.value("ok", false)) {
        on_ok(path);
      } else if (r.value("code", "") == "conflict") {
        std::lock_guard lock(prog.mu);
        summary.conflicts.push_back({path, ConflictKind::changed_remotely, r.value("message", "changed on the remote during the sync")});
      } else {
        prog.note_no_space(r);
        prog.error(fmt::format("{} '{}': {}", method, path, r.value("message", "failed")));
      }
    }
  };
  auto cancelled = [&] { return o.cancelled && o.cancelled(); };
  if (o.before_transfer) o.before_transfer();

  // 5a. Files or links where a directory goes, then directories.
  if (!plan.replace.empty()) {
    auto reply = mutate("sync/delete", json{{"base", base}, {"paths", plan.replace}});
    results_of("sync/delete", reply, [&](const std::string& p) {
      std::lock_guard lock(prog.mu);
      manifest->forget(p);
    });
  }
  // 5b. Directories, whole files in batches, deltas one per request, links and attributes: all
  // in flight together. The directories go first but are not waited for: a batch whose files
  // reach the agent first creates their parents itself (0755), and sync/mkdir then sets the
  // exact mode of a directory that exists, so either order ends the same. Meanwhile the first
  // batches are read and compressed (1100 directories took the agent ~17 ms, the helper idle).
  std::vector<std::function<void()>> jobs;
  if (!plan.mkdirs.empty()) {
    jobs.push_back([&] {
      json dirs = json::array();
      for (const auto& d : plan.mkdirs) dirs.push_back({{"path", d}, {"mode", local.at(d).mode}});
      auto reply = mutate("sync/mkdir", json{{"base", base}, {"dirs", std::move(dirs)}});
      results_of("sync/mkdir", reply, [&](const std::string& p) {
        record(p, local.at(p));
        std::lock_guard lock(prog.mu);
        ++summary.dirs_made;
      });
      spdlog::debug("sync: mkdirs done");
    });
  }
  // Hashes the batches took while reading (under prog.mu): put into the walk's entries after
  // the transfers, so a watched engine's next push sees them as hashed.
  std::vector<std::pair<std::string, Hash128>> late_hashes;
  auto keep_copy = [&](const FileMeta& local, std::span<const std::uint8_t> bytes) {
    // The delta base for the next edit of this file, so it needs no signature round trip.
    if (local.size < popt.delta_min_size || local.size > o.cache_max_bytes / 4 || !local.hash) return;
    std::error_code ec;
    fs::create_directories(cache_dir, ec);
    (void)write_file_atomically(cache_dir / to_hex(*local.hash),
                                std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  };
  // A file too large for one request: begin, 8 MiB compressed chunks at their offsets with
  // kStreamInFlight in flight, commit (the agent checks every byte arrived once, and the hash).
  // Each worker reads, compresses and sends its own chunk, so reading, compressing (on every
  // core) and the link overlap instead of taking turns.
  auto stream_file = [&](const Transfer& t) {
    const int fd = ::open((root / t.path).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      return prog.read_failed(t.path, e == ENOENT ? "missing" : std::strerror(e));
    }
    const AtExit close_fd{[fd] { ::close(fd); }};
    auto begun = endpoint_.call("sync/fileBegin", json{{"base", base},
                                                       {"path", t.path},
                                                       {"size", t.local.size},
                                                       {"hash", hash_binary(*t.local.hash)},
                                                       {"mode", t.local.mode},
                                                       {"mtimeNs", t.local.mtime_ns},
                                                       {"expect", expect_for(remote, t.path)}});
    if (!begun) {
      prog.note_no_space(begun.error());
      return prog.error(agent_error("sync/fileBegin", t.path, begun.error().message));
    }
    spdlog::debug("sync: stream {} begun", t.path);
    const json handle = begun->at("handle");
    // On a long link the endpoint has bulk lanes: the first workers each own one and
    // send their chunks there as sync/filePart (written in place into the temp file by that
    // lane's agent), then tell the main agent where they landed; a lane that is not up (yet, or
    // any more) costs nothing but its chunk going over the main agent instead.
    const std::string temp = begun->value("temp", std::string());
    const std::size_t lanes = temp.empty() ? 0 : endpoint_.bulk_lanes();
    std::atomic<std::uint64_t> next{0}, sent{0}, wire{0};
    std::atomic<bool> failed{false};
    // No .ferry/sent copy of a streamed file: most big whole sends (datasets, checkpoints,
    // first pushes) are never edited, and copying 256 MiB cost ~3% of an initial sync. The
    // first delta of such a file fetches a signature; that send keeps the copy (keep_copy).
    // Sends one compressed chunk on `lane`; false when it must go over the main agent instead.
    auto send_on_lane = [&](std::size_t lane, std::uint64_t offset, std::size_t got, const std::vector<std::uint8_t>& packed) {
      auto part = endpoint_.call_lane(lane, "sync/filePart",
                                      json{{"base", base}, {"path", t.path}, {"temp", temp}, {"offset", offset},
                                           {"rawSize", got}, {"data", as_binary(std::vector<std::uint8_t>(packed))}},
                                      kBigCallTimeout);
      if (!part) {
        spdlog::debug("sync: {} chunk at {}: lane {}: {}; over the main agent", t.path, offset, lane, part.error().message);
        return false;
      }
      return true;
    };
    auto worker = [&](std::optional<std::size_t> lane) {
      std::vector<std::uint8_t> buf(kReadChunk);
      while (!failed && !cancelled()) {
        const std::uint64_t offset = next.fetch_add(kReadChunk);
        if (offset >= t.local.size) return;
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(kReadChunk, t.local.size - offset));
        std::size_t got = 0;
        while (got < want) {
          const ssize_t k = ::pread(fd, buf.data() + got, want - got, static_cast<off_t>(offset + got));
          if (k < 0 && errno == EINTR) continue;
          if (k <= 0) break;
          got += static_cast<std::size_t>(k);
        }
        if (got != want) {
          failed = true;  // shrank while being sent: counted as unstable below
          return;
        }
        auto packed = zstd_compress(buf.data(), got, stream_level(buf.data(), got));
        wire += packed.size();
        json append{{"base", base}, {"handle", handle}, {"offset", offset}, {"rawSize", got}};
        if (lane && send_on_lane(*lane, offset, got, packed)) append["placed"] = true;
        else append["data"] = as_binary(std::move(packed));
        auto appended = endpoint_.call("sync/fileAppend", std::move(append), kBigCallTimeout);
        if (!appended) {
          if (!failed.exchange(true)) {
            prog.note_no_space(appended.error());
            prog.error(agent_error("sync/fileAppend", t.path, appended.error().message));
          }
          return;
        }
        sent += got;
        prog.advance(got);
      }
    };
    {
      std::vector<std::jthread> pool;
      const auto chunks = (t.local.size + kReadChunk - 1) / kReadChunk;
      // Lanes first: a file of a few chunks spreads them over several windows too.
      auto lane_of = [&](std::uint64_t i) { return i < lanes ? std::optional<std::size_t>(i) : std::nullopt; };
      for (std::uint64_t i = 1; i < std::min<std::uint64_t>(kStreamInFlight + lanes, chunks); ++i) pool.emplace_back(worker, lane_of(i));
      worker(lane_of(0));
    }
    {
      std::lock_guard lock(prog.mu);
      summary.bytes_on_wire += wire;
    }
    if (sent != t.local.size) {
      (void)endpoint_.call("sync/fileAbort", json{{"base", base}, {"handle", handle}});
      std::lock_guard lock(prog.mu);
      const bool reported = std::any_of(summary.errors.begin(), summary.errors.end(),
                                        [&](const std::string& e) { return e.starts_with("sync/fileAppend '" + t.path + "'"); });
      if (!cancelled() && !reported) summary.unstable.push_back(t.path);  // shrank while being sent
      return;
    }
    spdlog::debug("sync: stream {} all chunks sent", t.path);
    auto committed = mutate("sync/fileCommit", json{{"base", base}, {"handle", handle}}, kBigCallTimeout);
    spdlog::debug("sync: stream {} committed", t.path);
    if (!committed) {
      const std::string code = committed.error().data ? committed.error().data->value("code", "") : "";
      prog.note_no_space(committed.error());
      std::lock_guard lock(prog.mu);
      if (code == "conflict") summary.conflicts.push_back({t.path, ConflictKind::changed_remotely, committed.error().message});
      else if (code == "hash_mismatch") summary.unstable.push_back(t.path);  // changed while being read
      else summary.errors.push_back(agent_error("sync/fileCommit", t.path, committed.error().message));
      return;
    }
    record(t.path, t.local);
    std::lock_guard lock(prog.mu);
    ++summary.files_sent;
    summary.bytes_literal += t.local.size;
  };
  std::vector<std::vector<const Transfer*>> batches(1);
  std::uint64_t batch_bytes = 0;
  // Bulk lanes (a long link) open while the first jobs run, so they are up for the big files.
  if (std::any_of(plan.send_whole.begin(), plan.send_whole.end(), [&](const Transfer& t) { return t.local.size > o.stream_above; }))
    (void)endpoint_.bulk_lanes();
  for (const auto& t : plan.send_whole) {
    if (t.local.size > o.stream_above) {
      jobs.push_back([&, tp = &t] { stream_file(*tp); });
      continue;
    }
    if (!batches.back().empty() && (batches.back().size() >= kBatchFiles || batch_bytes + t.local.size > kBatchBytes)) {
      batches.emplace_back();
      batch_bytes = 0;
    }
    batches.back().push_back(&t);
    batch_bytes += t.local.size;
  }
  for (auto& batch : batches) {
    if (batch.empty()) continue;
    jobs.push_back([&, batch] {
      json files = json::array();
      std::vector<const Transfer*> sent;
      std::vector<FileMeta> metas;  // as sent: with the hash taken while reading, if the scan had none
      std::vector<std::vector<std::uint8_t>> kept;
      std::uint64_t raw = 0, wire = 0;
      for (const Transfer* t : batch) {
        FileMeta meta = t->local;
        std::vector<std::uint8_t> read;
        if (!meta.hash) {
          auto hashed = read_hashing(root, t->path, meta, *st.index);
          if (!hashed) {
            prog.read_failed(t->path, hashed.error());
            continue;
          }
          if (!*hashed) {
            std::lock_guard lock(prog.mu);
            summary.unstable.push_back(t->path);  // changed since the scan or while read
            continue;
          }
          read = std::move(**hashed);
          std::lock_guard lock(prog.mu);
          late_hashes.emplace_back(t->path, *meta.hash);
        } else {
          auto bytes = read_bytes(root / t->path);
          if (!bytes) {
            prog.read_failed(t->path, bytes.error());
            continue;
          }
          if (delta::hash128(*bytes) != *meta.hash) {
            std::lock_guard lock(prog.mu);
            summary.unstable.push_back(t->path);  // changed since the scan: the next sync sends it
            continue;
          }
          read = std::move(*bytes);
        }
        auto* bytes = &read;
        auto packed = zstd_compress(bytes->data(), bytes->size());
        if (packed.size() > kMaxRequestPayload) {
          prog.error(fmt::format("'{}' ({}) compresses to more than one request may carry (lower stream_above)",
                                 t->path, human_bytes(t->local.size)));
          continue;
        }
        raw += bytes->size();
        wire += packed.size();
        files.push_back({{"path", t->path},
                         {"size", meta.size},
                         {"hash", hash_binary(*meta.hash)},
                         {"mode", meta.mode},
                         {"mtimeNs", meta.mtime_ns},
                         {"data", as_binary(std::move(packed))},
                         {"expect", expect_for(remote, t->path)}});
        sent.push_back(t);
        metas.push_back(std::move(meta));
        kept.push_back(t->local.size >= popt.delta_min_size ? std::move(*bytes) : std::vector<std::uint8_t>{});
      }
      if (sent.empty()) return;
      spdlog::debug("sync: batch of {} read", sent.size());
      auto reply = mutate("sync/writeBatch", json{{"base", base}, {"files", std::move(files)}}, kBigCallTimeout);
      spdlog::debug("sync: batch of {} answered", sent.size());
      {
        std::lock_guard lock(prog.mu);
        summary.bytes_on_wire += wire;
      }
      results_of("sync/writeBatch", reply, [&](const std::string& p) {
        for (std::size_t i = 0; i < sent.size(); ++i) {
          if (sent[i]->path != p) continue;
          record(p, metas[i]);
          keep_copy(metas[i], kept[i]);
          std::lock_guard lock(prog.mu);
          ++summary.files_sent;
          summary.bytes_literal += sent[i]->local.size;
        }
      });
      prog.advance(raw);
    });
  }
  for (const auto& t : plan.send_delta) {
    jobs.push_back([&, tp = &t] {
      const Transfer& t = *tp;
      // plan_manifest: a snapshot nobody writes while jobs run (manifest itself is being recorded into).
      auto m = plan_manifest.entries.find(t.path);
      const bool own_base = m != plan_manifest.entries.end() && m->second.hash &&
                            remote_matches_manifest(*t.remote_base, m->second) &&
                            fs::exists(cache_dir / to_hex(*m->second.hash));
      // Without a copy of its own the helper needs the agent's coarse signature: asked for now,
      // so the agent reads its copy while the helper reads this one (a 1 GiB file: ~0.4 s each).
      auto coarse_signature = [&] {
        return endpoint_.call("sync/signature", json{{"base", base}, {"path", t.path}, {"blockSize", kCoarseBlock}, {"strongLen", 8}},
                              kBigCallTimeout);
      };
      std::future<std::expected<json, protocol::ResponseError>> coarse_ahead;
      if (!own_base && t.remote_base && t.remote_base->size >= kTwoLevelAbove)
        coarse_ahead = std::async(std::launch::async, coarse_signature);
      auto read = FileBytes::read(root / t.path);
      if (!read) return prog.read_failed(t.path, read.error());
      const std::span<const std::uint8_t> bytes = read->bytes();
      if (!t.local.hash || delta::hash128(bytes) != *t.local.hash) {
        std::lock_guard lock(prog.mu);
        summary.unstable.push_back(t.path);
        return;
      }
      spdlog::debug("sync: delta {}: read and verified", t.path);
      std::vector<std::uint8_t> d;
      std::expected<delta::DeltaStats, delta::DeltaError> stats = std::unexpected(delta::DeltaError{});
      std::uint64_t wire = 0;
      // The helper's own copy of what it last sent, when the remote still holds exactly that.
      if (own_base) {
        auto base_bytes = read_bytes(cache_dir / to_hex(*m->second.hash));
        if (base_bytes && delta::hash128(*base_bytes) == *m->second.hash)
          stats = delta::generate_delta_from_base(*base_bytes, bytes, delta::choose_block_size(base_bytes->size()), d);
      }
      if (!stats && t.remote_base && t.remote_base->size >= kTwoLevelAbove) {
        // Two levels: 1 MiB blocks first, then 1 KiB blocks over only the base ranges no
        // coarse block matched (a 1-byte edit in 1 GiB: ~25 KiB instead of ~400 KiB).
        auto coarse_sig = coarse_ahead.valid() ? coarse_ahead.get() : coarse_signature();
        spdlog::debug("sync: delta {}: coarse signature", t.path);
        if (coarse_sig) {
          const auto& cs = coarse_sig->at("signature").get_binary();
          wire += cs.size();
          auto view = delta::SignatureView::parse(cs);
          std::vector<std::uint8_t> coarse;
          std::expected<delta::DeltaStats, delta::DeltaError> cstats = std::unexpected(delta::DeltaError{});
          if (view) cstats = delta::generate_delta(*view, bytes, coarse);
          spdlog::debug("sync: delta {}: coarse delta", t.path);
          auto ranges = cstats ? delta::unreferenced_base_ranges(coarse) : std::unexpected(delta::DeltaError{});
          std::uint64_t unmatched = 0;
          if (ranges)
            for (const auto& r : *ranges) unmatched += r.length;
          if (ranges && (ranges->empty() || unmatched > t.remote_base->size / 4 || ranges->size() > kMaxFineRanges)) {
            // Nothing left to refine, or so little matched that a finer signature would cost
            // more than it saves: the coarse delta (mostly compressed literal) goes as it is.
            d = std::move(coarse);
            stats = cstats;
          } else if (ranges) {
            json rs = json::array();
            for (const auto& r : *ranges) rs.push_back(json::array({r.offset, r.length}));
            auto fine_sig = endpoint_.call("sync/signature",
                                           json{{"base", base}, {"path", t.path}, {"blockSize", kFineBlock}, {"strongLen", 8}, {"ranges", rs}},
                                           kBigCallTimeout);
            spdlog::debug("sync: delta {}: fine signatures", t.path);
            if (fine_sig && fine_sig->contains("signatures")) {
              std::vector<delta::SignatureView> views;
              bool ok = true;
              for (const auto& f : fine_sig->at("signatures")) {
                wire += f.get_binary().size();
                auto v = delta::SignatureView::parse(f.get_binary());
                if (!v) ok = false;
                else views.push_back(*v);
              }
              if (ok) {
                d.clear();
                stats = delta::refine_delta(coarse, views, bytes, d);
              }
            }
          }
        }
      }
      if (!stats) {
        auto sig = endpoint_.call("sync/signature", json{{"base", base}, {"path", t.path}}, kBigCallTimeout);
        if (!sig) return prog.error(agent_error("sync/signature", t.path, sig.error().message));
        const auto& sig_bytes = sig->at("signature").get_binary();
        wire += sig_bytes.size();
        auto view = delta::SignatureView::parse(sig_bytes);
        if (!view) return prog.error(fmt::format("signature of '{}' rejected: {}", t.path, view.error().message));
        d.clear();
        stats = delta::generate_delta(*view, bytes, d);
        if (!stats) return prog.error(fmt::format("delta for '{}': {}", t.path, stats.error().message));
      }
      spdlog::debug("sync: delta {}: delta ready", t.path);
      auto packed = zstd_compress(d.data(), d.size());
      wire += packed.size();
      const std::uint64_t delta_size = d.size();
      auto reply = mutate("sync/applyDelta",
                                  json{{"base", base},
                                       {"path", t.path},
                                       {"size", t.local.size},
                                       {"hash", hash_binary(*t.local.hash)},
                                       {"mode", t.local.mode},
                                       {"mtimeNs", t.local.mtime_ns},
                                       {"delta", as_binary(std::move(packed))},
                                       {"deltaSize", delta_size},
                                       {"expect", expect_for(remote, t.path)}},
                                  kBigCallTimeout);
      spdlog::debug("sync: delta {}: applied", t.path);
      {
        std::lock_guard lock(prog.mu);
        summary.bytes_on_wire += wire;
      }
      if (!reply) {
        if (reply.error().data && reply.error().data->value("code", "") == "conflict") {
          std::lock_guard lock(prog.mu);
          summary.conflicts.push_back({t.path, ConflictKind::changed_remotely, reply.error().message});
        } else {
          prog.note_no_space(reply.error());
          prog.error(agent_error("sync/applyDelta", t.path, reply.error().message));
        }
        return;
      }
      record(t.path, t.local);
      keep_copy(t.local, bytes);
      {
        std::lock_guard lock(prog.mu);
        ++summary.files_sent;
        summary.bytes_literal += stats->literal_bytes;
        summary.bytes_matched += stats->copied_bytes;
      }
      prog.advance(t.local.size);
    });
  }
  if (!plan.symlinks.empty()) {
    jobs.push_back([&] {
      json links = json::array();
      for (const auto& t : plan.symlinks) links.push_back({{"path", t.path}, {"target", t.local.link_target}});
      auto reply = mutate("sync/symlink", json{{"base", base}, {"links", std::move(links)}});
      results_of("sync/symlink", reply, [&](const std::string& p) {
        record(p, local.at(p));
        std::lock_guard lock(prog.mu);
        ++summary.files_sent;
      });
    });
  }
  if (!plan.metadata.empty()) {
    jobs.push_back([&] {
      json entries = json::array();
      for (const auto& t : plan.metadata)
        entries.push_back({{"path", t.path},
                           {"mode", t.local.mode},
                           {"mtimeNs", t.local.kind == EntryKind::file ? json(t.local.mtime_ns) : json(nullptr)}});
      auto reply = mutate("sync/setAttrs", json{{"base", base}, {"entries", std::move(entries)}});
      results_of("sync/setAttrs", reply, [&](const std::string& p) {
        record(p, local.at(p));
        std::lock_guard lock(prog.mu);
        ++summary.metadata_only;
      });
    });
  }
  run_parallel(jobs, o.in_flight, o.cancelled);
  spdlog::debug("sync: transfers done");
  if (prog.no_space) {
    // One line that says what to do, ahead of the per-file "No space left on device" lines.
    const json& space = *prog.no_space;
    summary.no_space = SyncSummary::NoSpace{space.value("path", target_.remote_root), space.value("availableBytes", std::uint64_t{0}),
                                            space.value("totalBytes", std::uint64_t{0}), prog.total, prog.no_space_paths};
    summary.errors.insert(summary.errors.begin(), no_space_advice(endpoint_.description(), space, prog.total));
  }
  if (!late_hashes.empty()) st.index_dirty = true;
  for (auto& [p, h] : late_hashes)
    if (auto it = scanned->entries.find(p); it != scanned->entries.end()) it->second.hash = h;

  // 5c. Deletes last, so an interrupted sync never loses a file it was about to replace.
  if (!cancelled() && (!plan.deletes.empty() || !plan.rmdirs.empty())) {
    // Each file must still be what ferry wrote (or, listed, what the listing saw).
    json expect = json::object();
    for (const auto& d : plan.deletes)
      if (auto it = remote.find(d); it != remote.end() && it->second.kind == EntryKind::file) expect[d] = expect_for(remote, d);
    auto reply = mutate("sync/delete",
                        json{{"base", base}, {"paths", plan.deletes}, {"dirs", plan.rmdirs}, {"expect", std::move(expect)}});
    results_of("sync/delete", reply, [&](const std::string& p) {
      std::lock_guard lock(prog.mu);
      manifest->forget(p);
      if (!local.contains(p) && std::find(plan.deletes.begin(), plan.deletes.end(), p) != plan.deletes.end())
        ++summary.files_deleted;
    });
  }
  for (const auto& p : plan.adopted) manifest->record(p, local.at(p));
  for (const auto& p : plan.forget) manifest->forget(p);
  summary.cancelled = cancelled();

  // 6. Whether the manifest is now the whole of ferry's writes there: this push planned
  // against it or a full listing, and the agent's generation moved by exactly our requests.
  // A save that listed only its own paths proves nothing about the rest: unknown.
  const std::uint64_t ours = mutations.load();
  std::string end_epoch;
  std::uint64_t end_generation = 0;
  bool end_known = false;
  if (stamp_known && (fast || !save)) {
    if (ours == 0) {
      end_epoch = start_epoch, end_generation = start_generation, end_known = !start_epoch.empty();
    } else if (auto stamp = endpoint_.call("sync/state", json{{"base", base}}); stamp) {
      end_epoch = stamp->value("epoch", "");
      end_generation = stamp->value("generation", std::uint64_t{0});
      end_known = !end_epoch.empty() && (start_epoch.empty() || end_epoch == start_epoch) &&
                  end_generation == start_generation + ours;
    }
  }
  if (end_known != !manifest->remote_epoch.empty() || end_epoch != manifest->remote_epoch ||
      end_generation != manifest->remote_generation || ours > 0 || !plan.adopted.empty() || !plan.forget.empty())
    ++st.manifest_version;
  manifest->remote_epoch = end_known ? end_epoch : "";
  manifest->remote_generation = end_known ? end_generation : 0;
  summary.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (save) return summary;  // the cache is trimmed by full pushes; a save must stay fast
  spdlog::debug("sync: final state read");

  // The sent-copy cache trimmed to what it still describes.
  std::error_code ec;
  if (fs::is_directory(cache_dir, ec)) {
    std::set<std::string> live;
    for (const auto& [p, m] : manifest->entries)
      if (m.hash) live.insert(to_hex(*m.hash));
    std::uint64_t total = 0;
    for (const auto& e : fs::directory_iterator(cache_dir, ec)) {
      if (!live.contains(e.path().filename().string()) || total > o.cache_max_bytes) fs::remove(e.path(), ec);
      else total += e.file_size(ec);
    }
  }
  summary.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  spdlog::debug("sync: sent cache trimmed");
  return summary;
}

}  // namespace ferry::sync

// The sync engine: see sync_engine.hpp. The order of remote steps follows docs/sync.md
// ("For the transfer pipeline"): replace, then mkdirs, files (whole batches and deltas),
// symlinks and metadata in flight together, then deletes; the manifest records each
// acknowledged write.
#include "helper/sync/sync_engine.hpp"

#include <fcntl.h>

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

#include "common/full_io.hpp"
#include "common/file_times.hpp"
#include "common/open_file.hpp"
#include "common/unique_fd.hpp"
#include "helper/remote/endpoint.hpp"
#include "helper/sync/atomic_file.hpp"
#include "helper/sync/file_index.hpp"
#include "helper/sync/project_lock.hpp"
#include "helper/sync/push_pipeline.hpp"
#include "helper/sync/manifest.hpp"
#include "helper/sync/new_file_mode.hpp"
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

// A failure of the local tree's reading (a scan, the manifest): io, in its own words.
template <class T>
std::expected<T, Error> local_io(std::expected<T, std::string> r) {
  if (!r) return std::unexpected(Error{ErrorKind::io, std::move(r.error())});
  return std::move(*r);
}

// Hashes these paths of a walk now (a re-read with the scanner's stability checks), in place; the
// ones caught mid-change join `scanned.unstable` and are returned.
std::expected<std::vector<std::string>, Error> hash_now(const fs::path& root, const IgnoreMatcher& ignore, FileIndex& index,
                                                        ScanResult& scanned, const std::vector<std::string>& paths) {
  if (paths.empty()) return std::vector<std::string>{};
  auto part = scan_paths(root, ignore, &index, paths);
  if (!part) return std::unexpected(Error{ErrorKind::io, "scan " + root.string() + ": " + part.error()});
  apply_dirty(scanned.entries, paths, std::move(part->entries));
  scanned.unstable.insert(scanned.unstable.end(), part->unstable.begin(), part->unstable.end());
  scanned.stats.hashed += part->stats.hashed;
  return std::move(part->unstable);
}

}  // namespace

namespace engine_parts {

std::string human_bytes(std::uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  if (n < (1u << 20)) return fmt::format("{:.1f} KiB", n / 1024.0);
  if (n < (1u << 30)) return fmt::format("{:.1f} MiB", n / 1048576.0);
  return fmt::format("{:.2f} GiB", n / 1073741824.0);
}

int stream_level(const std::uint8_t* data, std::size_t size) { return protocol::payload_level_for(data, size, kStreamLevel); }

// A file the scan left unhashed (new to the remote, so it goes whole), read once for both its
// bytes and its hash. Held to the scanner's rules: still what the scan saw (size, mtime,
// mode) and unchanged while read (inode, size, mtime, ctime), else nullopt (unstable: the next
// sync sends it). The hash goes into `meta` and the index, as the scanner's would.
std::expected<std::optional<std::vector<std::uint8_t>>, std::string> read_hashing(const fs::path& root, const std::string& rel,
                                                                                 FileMeta& meta, FileIndex& index, bool check_mode) {
  const std::int64_t hashed_at = now_ns();
  const posix::UniqueFd file(posix::open_file_nofollow(root / rel, O_RDONLY));
  if (!file) {
    if (errno == ENOENT || errno == ELOOP) return std::unexpected(std::string("missing"));
    return std::unexpected(fmt::format("cannot open {}: {}", rel, std::strerror(errno)));
  }
  const int fd = file.get();
  posix::FileStat before, after;
  if (const int err = posix::stat_fd(fd, before)) return std::unexpected(fmt::format("cannot stat {}: {}", rel, std::strerror(err)));
  if (before.kind != posix::FileKind::regular || before.size != meta.size || before.mtime_ns != meta.mtime_ns ||
      (check_mode && before.mode != meta.mode))
    return std::nullopt;
  std::vector<std::uint8_t> out(meta.size);
  const ssize_t got = posix::read_full(fd, out.data(), out.size());
  std::uint8_t probe;  // past the size: must be EOF
  const ssize_t more = got == static_cast<ssize_t>(out.size()) ? posix::read_full(fd, &probe, 1) : 0;
  if (got < 0 || more < 0) return std::unexpected(fmt::format("cannot read {}: {}", rel, std::strerror(errno)));
  if (more > 0) return std::nullopt;  // grew while read
  if (static_cast<std::size_t>(got) != out.size() || posix::stat_fd(fd, after) != 0 || !posix::same_file_state(before, after))
    return std::nullopt;
  meta.hash = delta::hash128(out);
  index.store(rel, IndexKey{meta.size, meta.mtime_ns, before.mode, after.ino}, *meta.hash, hashed_at);
  return out;
}

}  // namespace engine_parts

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

Error engine_parts::list_failed(remote::Endpoint& endpoint, const protocol::ResponseError& e) {
  return remote::call_error(e, std::string(wire::method::kList) + " on " + endpoint.description() + ": " + e.message);
}

std::expected<RemoteListing, Error> engine_parts::list_remote_paged(SyncClient& client, wire::ListParams params,
                                                                  const SyncOptions& o) {
  // A continuation names the same place as the first page (a read-only source or a base).
  const wire::Where where = params.where;
  params.page_entries = static_cast<std::int64_t>(std::max<std::size_t>(o.list_page_entries, 1));
  params.page_ms = kListPageMs;
  RemoteListing out;
  std::uint64_t listed = 0;
  std::size_t mounts_logged = 0;
  for (;;) {
    auto page = client.list(params, kBigCallTimeout);
    if (!page) return std::unexpected(list_failed(client.endpoint(), page.error()));
    if (!params.cursor) out.stamp = page->stamp;
    for (auto& [path, meta] : tree_state_of(page->entries)) out.entries.insert_or_assign(path, std::move(meta));
    listed = page->listed.value_or(listed + page->entries.size());
    if (page->other_filesystems)
      for (const auto& path : *page->other_filesystems)
        if (mounts_logged++ < 20)
          spdlog::warn("sync: {} on {} is another filesystem (a mount point): listed as a directory, not walked", path,
                       client.endpoint().description());
    if (o.listing_progress) o.listing_progress(listed);
    if (!page->cursor) return out;
    if (o.cancelled && o.cancelled()) {
      // The agent frees the walk's directories now rather than when newer listings push it out.
      (void)client.cancel_listing(where, *page->cursor, std::chrono::seconds(30));
      out.cancelled = true;
      return out;
    }
    params = wire::ListParams{};
    params.where = where;
    params.cursor = page->cursor;
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
    : endpoint_(endpoint), client_(std::make_unique<SyncClient>(endpoint)), target_(std::move(target)), state_(std::make_unique<State>()) {
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

std::expected<void, Error> SyncEngine::watch_local_tree() {
  std::lock_guard lock(state_->mu);
  if (state_->watcher) return {};
  auto w = TreeWatcher::open(target_.local_root, target_.exclude, WatchOptions{.skipped_dirs = target_.nested});
  if (!w) return std::unexpected(Error{ErrorKind::io, w.error()});
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

std::expected<SyncSummary, Error> SyncEngine::push(const SyncOptions& o) {
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
std::expected<ScanResult, Error> SyncEngine::walk_for_push(State& st, const SyncOptions& o) {
  ScanOptions scan_options;
  if (!o.dry_run) {
    const auto& written = st.manifest->entries;
    const std::uint64_t stream_above = o.stream_above;
    scan_options.hash_if = [&written, stream_above](const std::string& path, std::uint64_t size) {
      return size > stream_above || written.contains(path);
    };
  }
  return local_io(scan_tree(target_.local_root, *st.ignore, &*st.index, scan_options));
}

// The hash index: a cache, so an unreadable one means rehashing.
void SyncEngine::load_index(State& st) {
  if (st.index) return;
  auto index = FileIndex::load(default_index_path(target_.local_root));
  if (!index) spdlog::warn("sync: index unreadable ({}); rehashing everything", index.error());
  st.index.emplace(index ? std::move(*index) : FileIndex{});
}

// The hash index and the manifest (unreadable is an error).
std::expected<void, Error> SyncEngine::load_local_state(State& st) {
  load_index(st);
  if (!st.manifest) {
    auto loaded = load_manifest(manifest_path());
    if (!loaded) return std::unexpected(Error{ErrorKind::io, std::move(loaded.error())});
    st.manifest = std::move(*loaded);
  }
  return {};
}

namespace {

// Whether `entries` has a file the push will stream (over `stream_above`) that the manifest does
// not have, for which `wanted(size)` holds: the files that make lanes worth asking for.
template <class Wanted>
bool any_new_streamed_file(const TreeState& entries, const Manifest& manifest, std::uint64_t stream_above, Wanted&& wanted) {
  for (const auto& [path, meta] : entries)
    if (meta.kind == EntryKind::file && meta.size > stream_above && !manifest.entries.contains(path) && wanted(meta.size)) return true;
  return false;
}

}  // namespace

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
  st.ignore = IgnoreMatcher::for_tree(target_.local_root, target_.exclude, target_.nested);
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
  // A file to stream that the remote cannot have yet: the lanes will be wanted, and on a host
  // known to be far their connections can open while the link's own is still being made.
  if (!o.dry_run && any_new_streamed_file(scanned->entries, *st.manifest, o.stream_above, [](std::uint64_t) { return true; }))
    client_->expect_bulk();
  st.prepared = State::PreparedScan{std::move(*scanned), o.stream_above, o.dry_run};
}


namespace {

// The agent calls of the push's own stages (the transfer's are PushPipeline's).
std::expected<wire::StateResult, protocol::ResponseError> call_state(SyncClient& client, const std::string& base) {
  return client.state(wire::Where::at_base(base));
}

// One unpaged sync/list: a save's few paths, or the hashes of files to verify.
std::expected<wire::ListResult, protocol::ResponseError> call_list(SyncClient& client, const wire::ListParams& params) {
  return client.list(params, kBigCallTimeout);
}

// Sync on save: the plan sees only the saved paths, so nothing else looks deleted.
void keep_only(TreeState& t, const std::vector<std::string>& only_paths) {
  std::erase_if(t, [&](const auto& kv) {
    return std::none_of(only_paths.begin(), only_paths.end(), [&](const std::string& p) { return kv.first == p; });
  });
}

// The manifest records symlinks and directories with local mtimes, which are no precondition
// the agent can check: a fast plan that would overwrite or delete one lists first.
bool needs_listing(const Plan& pl, const TreeState& remote) {
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
}

}  // namespace

// What one push carries from stage to stage.
struct SyncEngine::PushRun {
  PushRun(const SyncOptions& options, const std::vector<std::string>& protect)
      : o(options), save(!options.only_paths.empty()), protect(IgnoreMatcher::from_patterns(protect)) {
    summary.dry_run = o.dry_run;
  }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0).count(); }

  const SyncOptions& o;
  const Clock::time_point t0 = Clock::now();
  SyncSummary summary;
  const bool save;  // sync on save: only o.only_paths
  const IgnoreMatcher protect;
  // 1. The local side.
  std::optional<State::PreparedScan> prepared;
  ScanResult scanned;
  bool from_watch = false;  // the read is the last one plus the watcher's changes
  // 2, 3. The manifest and the remote.
  Manifest* manifest = nullptr;
  std::string start_epoch;
  std::uint64_t start_generation = 0;
  bool stamp_known = false;
  bool stamp_from_listing = false;  // no sync/state: the listing's first page carries the stamp
  bool fast = false;            // nobody wrote since the manifest: plan against it, list nothing
  bool alias_manifest = false;  // a full fast push plans straight against st.manifest
  TreeState remote;
  bool listing_cancelled = false;  // cancelled between the pages of the remote listing
  Manifest plan_manifest;
  // 4. The plan.
  PlanOptions popt;
  Plan plan;
};

std::expected<SyncSummary, Error> SyncEngine::push_locked(const SyncOptions& o) {
  PushRun run(o, target_.protect);
  std::lock_guard state_lock(state_->mu);
  State& st = *state_;
  if (auto ok = push_read_local(run); !ok) return std::unexpected(ok.error());
  // The read stands for the tree until the watcher's queue position it was taken at, unless
  // some file was caught mid-change (left out of the entries, so it would look deleted).
  AtExit keep_read{[&] {
    if (st.watcher && !run.save && run.scanned.unstable.empty()) st.known_local = std::move(run.scanned.entries);
  }};
  // A push cancelled while the remote was listed has planned and sent nothing.
  auto cancelled_while_listing = [&] {
    run.summary.cancelled = true;
    run.summary.seconds = run.elapsed();
    return std::move(run.summary);
  };
  if (auto ok = push_read_remote(run); !ok) return std::unexpected(ok.error());
  if (run.listing_cancelled) return cancelled_while_listing();
  if (auto ok = push_plan(run); !ok) return std::unexpected(ok.error());
  if (run.listing_cancelled) return cancelled_while_listing();
  if (o.dry_run) {
    const Plan& plan = run.plan;
    run.summary.files_sent = plan.send_whole.size() + plan.send_delta.size() + plan.symlinks.size();
    run.summary.files_deleted = plan.deletes.size();
    run.summary.dirs_made = plan.mkdirs.size();
    run.summary.metadata_only = plan.metadata.size();
    run.summary.bytes_literal = plan.whole_bytes();
    run.summary.seconds = run.elapsed();
    return std::move(run.summary);
  }
  client_->reset_write_stamp();
  const std::uint64_t mutations = push_transfer(run);
  push_commit_manifest(run, mutations);
  run.summary.seconds = run.elapsed();
  if (run.save) return std::move(run.summary);  // the cache is trimmed by full pushes; a save must stay fast
  spdlog::debug("sync: final state read");
  trim_sent_cache(o);
  run.summary.seconds = run.elapsed();
  spdlog::debug("sync: sent cache trimmed");
  return std::move(run.summary);
}

// 1. The local side: the rules, the index and manifest, and a read of the tree (the watcher's
// changes to the last read, a walk prepare_push made, or a walk now).
std::expected<void, Error> SyncEngine::push_read_local(PushRun& run) {
  State& st = *state_;
  const SyncOptions& o = run.o;
  const fs::path& root = target_.local_root;
  // A walk prepare_push made for this push (its rules, index and manifest are the ones loaded).
  run.prepared = std::move(st.prepared);
  st.prepared.reset();
  if (run.prepared && (run.save || st.watcher || run.prepared->stream_above != o.stream_above || run.prepared->dry_run != o.dry_run))
    run.prepared.reset();
  // A save of an ignore file changes what the rules say; any full push re-reads them all.
  const bool ignore_changed = std::any_of(o.only_paths.begin(), o.only_paths.end(), [](const std::string& p) {
    return p.ends_with(".gitignore") || p.ends_with(".ferryignore");
  });
  if (!st.ignore || (!run.save && !run.prepared) || ignore_changed) st.ignore = IgnoreMatcher::for_tree(root, target_.exclude, target_.nested);

  if (auto loaded = load_local_state(st); !loaded) return std::unexpected(loaded.error());
  take_watched_changes(run);
  if (run.prepared) {
    run.scanned = std::move(run.prepared->scan);
    run.summary.local_scan = "prepared";
  } else if (!run.from_watch) {
    spdlog::debug("sync: scan begins");
    auto scanned = run.save ? local_io(scan_paths(root, *st.ignore, &*st.index, o.only_paths)) : walk_for_push(st, o);
    if (!scanned) return std::unexpected(Error{ErrorKind::io, "scan " + root.string() + ": " + scanned.error().message});
    run.scanned = std::move(*scanned);
    spdlog::debug("sync: scan done, {} entries, {} hashed", run.scanned.entries.size(), run.scanned.stats.hashed);
  }
  const std::size_t indexed = st.index->size();
  if (!run.save && !run.from_watch) st.index->retain(run.scanned.entries);
  // A save's one new hash is not worth rewriting the whole index for (it is a cache: lost, the
  // file is hashed again); the next full push persists it.
  if ((!run.save && run.scanned.stats.hashed > 0) || st.index->size() != indexed) st.index_dirty = true;
  run.summary.unstable = run.scanned.unstable;
  return {};
}

// A full push of a watched engine first takes every event the kernel has queued. Why that
// cannot miss a save made before the request: inotify queues a file's event inside the
// syscall that changed it (write/close/rename/unlink), before that syscall returns to the
// editor, and the editor only then tells the IDE, which only then sends sync/push. So every
// change that happened before this push began is in the queue when it is read here, and a
// change made after the read is still queued for the next push (it may or may not be in this
// push's read of the file too, which is harmless). Every doubt walks the whole tree: no
// promise yet, a queue overflow, an ignore file changed, a directory moved away, too many
// changes, a watcher error; --force and mirror deletes keep their full walk.
// Sets run.from_watch (and run.scanned) when the last read plus the changes is the tree.
void SyncEngine::take_watched_changes(PushRun& run) {
  State& st = *state_;
  const SyncOptions& o = run.o;
  const fs::path& root = target_.local_root;
  SyncSummary& summary = run.summary;
  const bool watched = !run.save && st.watcher != nullptr;
  std::optional<WatchBatch> batch;
  if (watched) {
    auto taken = st.watcher->take_pending();
    if (!taken) {
      summary.full_walk_reason = "watcher failed: " + taken.error();
      spdlog::warn("sync: {}; walking the tree and starting a new watch", summary.full_walk_reason);
      st.watcher.reset();
      st.known_local.reset();
      // The new watch begins before the walk, so a change during the walk is queued for the next.
      if (auto w = TreeWatcher::open(root, target_.exclude, WatchOptions{.skipped_dirs = target_.nested}); w) st.watcher = std::move(*w);
      else spdlog::warn("sync: no watch of {}: {}; every push walks the tree", root.string(), w.error());
    } else {
      batch = std::move(*taken);
    }
  }
  if (batch && !batch->rescan && st.known_local && !o.force && o.deletes != DeleteMode::mirror &&
      batch->paths.size() <= kMaxDirtyPaths) {
    run.scanned.entries = std::move(*st.known_local);
    st.known_local.reset();
    if (batch->paths.empty()) {
      summary.local_scan = "none";
      run.from_watch = true;
    } else if (auto part = scan_paths(root, *st.ignore, &*st.index, batch->paths); part) {
      apply_dirty(run.scanned.entries, batch->paths, std::move(part->entries));
      run.scanned.unstable = std::move(part->unstable);
      run.scanned.issues = std::move(part->issues);
      run.scanned.stats = part->stats;
      summary.local_scan = "paths";
      run.from_watch = true;
    } else {
      summary.full_walk_reason = "re-reading the changed paths failed: " + part.error();
    }
  } else if (watched && summary.full_walk_reason.empty()) {
    summary.full_walk_reason = batch && batch->rescan                      ? batch->reason
                               : !st.known_local                            ? "no complete read since the watch began"
                               : o.force || o.deletes == DeleteMode::mirror ? "forced or mirror push"
                                                                            : fmt::format("{} paths changed", batch->paths.size());
  }
  st.known_local.reset();  // taken above or stale: the events it needed are consumed
}

// A push that will likely stream a file (one over stream_above the manifest does not have) asks
// for the bulk lanes now, so their connections open while the remote is read and the plan made:
// on a long link they take several round trips (0.3-0.4 s at 50 ms) the file would wait for.
// A file the manifest has goes as a delta (main agent) or not at all: a no-op opens nothing.
// On a short link bulk_lanes() opens nothing either. Only a push that lists calls this: one
// planned against a trusted manifest plans at once (and a watched no-op must not walk 100k
// entries here: that cost 10 ms of its 1 ms).
void SyncEngine::warm_bulk_lanes(const PushRun& run) {
  if (!run.o.dry_run && any_new_streamed_file(run.scanned.entries, *run.manifest, run.o.stream_above, [&](std::uint64_t size) {
        return client_->lanes_pay_for(size, run.o.cpu_lanes_above);
      }))
    (void)client_->bulk_lanes();
}

// The base's sync/state into run.start_*; an agent without the method leaves the stamp unknown.
std::expected<void, Error> SyncEngine::read_stamp(PushRun& run) {
  auto stamp = call_state(*client_, target_.remote_base);
  if (stamp) {
    run.start_epoch = stamp->epoch;
    run.start_generation = stamp->generation;
    run.stamp_known = true;
  } else if (stamp.error().code != protocol::error_code::kMethodNotFound) {
    if (stamp.error().data && stamp.error().data->value("code", "") == "no_space")
      return std::unexpected(
          Error{ErrorKind::io, no_space_advice(endpoint_.description(), stamp.error().data->value("space", json::object()), 0)});
    return std::unexpected(
        remote::call_error(stamp.error(), std::string(wire::method::kState) + " on " + endpoint_.description() + ": " + stamp.error().message));
  }
  return {};
}

// 2. What ferry last wrote (kept in memory, loaded above), 3. whether anyone wrote since, and
// if so, what is there now.
std::expected<void, Error> SyncEngine::push_read_remote(PushRun& run) {
  State& st = *state_;
  const SyncOptions& o = run.o;
  run.manifest = &*st.manifest;
  Manifest* manifest = run.manifest;
  manifest->remote_root = target_.remote_root;
  // A push that lists whatever the stamp says (a first push, --force, a mirror) takes the stamp
  // from its listing's first page: one round trip less (a connect's dozen at 50 ms is 0.6 s).
  run.stamp_from_listing = !run.save && (manifest->entries.empty() || o.force || o.deletes == DeleteMode::mirror);
  if (!run.stamp_from_listing)
    if (auto read = read_stamp(run); !read) return read;
  // Nobody wrote since the manifest was last complete: plan against it, list nothing. A file
  // changed behind ferry's back that this push writes or deletes is still caught, by the
  // agent, from the expected size+mtime every write carries. Mirror deletes need to see
  // remote-only files and --force needs the remote's current state: both list.
  const bool trusted = run.stamp_known && !run.start_epoch.empty() && manifest->remote_epoch == run.start_epoch &&
                       manifest->remote_generation == run.start_generation && !manifest->entries.empty();
  run.fast = trusted && !o.force && o.deletes != DeleteMode::mirror;
  spdlog::debug("sync: remote state read ({})", run.fast ? "manifest trusted" : "listing");
  // A full fast push plans straight against the manifest and copies it (as the remote state the
  // jobs check against, and as a snapshot nobody records into) only when there is work; a save
  // copies just its own entries. A no-op of a large tree copies nothing.
  run.alias_manifest = run.fast && !run.save;
  run.plan_manifest.remote_root = manifest->remote_root;
  if (run.save) {
    for (const auto& p : o.only_paths)
      if (auto it = manifest->entries.find(p); it != manifest->entries.end()) {
        run.plan_manifest.entries.insert(*it);
        if (run.fast) run.remote.insert(*it);
      }
  } else if (!run.fast) {
    run.plan_manifest = *manifest;
  }
  if (!run.fast) {
    warm_bulk_lanes(run);  // the link is up (state answered), its round trip known
    if (auto ok = list_remote(run); !ok) return std::unexpected(ok.error());
    if (run.listing_cancelled) return {};
    if (auto ok = hash_listed(run); !ok) return std::unexpected(ok.error());
    spdlog::debug("sync: remote listed, {} entries", run.remote.size());
  }
  if (run.save) {
    keep_only(run.remote, o.only_paths);
    keep_only(run.plan_manifest.entries, o.only_paths);
  }
  return {};
}

// The remote's entries into run.remote: a save's few paths, else the whole tree page by page
// (run.listing_cancelled when cancelled between pages).
std::expected<void, Error> SyncEngine::list_remote(PushRun& run) {
  const SyncOptions& o = run.o;
  const Manifest* manifest = run.manifest;
  const std::string& base = target_.remote_base;
  std::vector<std::string> known;
  if (!run.save) {
    known.reserve(manifest->entries.size());
    for (const auto& [p, m] : manifest->entries) known.push_back(p);
  } else {
    for (const auto& p : o.only_paths)
      if (manifest->entries.contains(p)) known.push_back(p);
  }
  wire::ListParams list_params;
  list_params.where = wire::Where::at_base(base);
  list_params.known = std::move(known);
  list_params.sweep = !o.dry_run && !run.save;
  if (run.save) {
    list_params.only = o.only_paths;  // sync on save: a few stats, not a walk
    auto listed = call_list(*client_, list_params);
    if (!listed) return std::unexpected(list_failed(endpoint_, listed.error()));
    run.remote = tree_state_of(listed->entries);
  } else {
    auto listed = list_remote_paged(*client_, std::move(list_params), o);
    if (!listed) return std::unexpected(listed.error());
    if (listed->cancelled) {
      run.listing_cancelled = true;
      return {};
    }
    run.remote = std::move(listed->entries);
    if (run.stamp_from_listing && listed->stamp) {
      run.start_epoch = listed->stamp->epoch;
      run.start_generation = listed->stamp->generation;
      run.stamp_known = true;
    }
  }
  // Files the manifest describes differently but that match the local size: most likely
  // written by a push whose manifest never reached the disk (a crash). Their hashes tell
  // "ours, already there" (adopted) from "changed behind ferry's back" (conflict).
  const TreeState& local = run.scanned.entries;
  std::vector<std::string> verify;
  for (const auto& [p, r] : run.remote) {
    if (r.kind != EntryKind::file || r.hash) continue;
    auto m = manifest->entries.find(p);
    auto l = local.find(p);
    if (m != manifest->entries.end() && l != local.end() && l->second.kind == EntryKind::file && l->second.size == r.size &&
        !remote_matches_manifest(r, m->second))
      verify.push_back(p);
  }
  if (verify.empty()) return {};
  wire::ListParams verify_params;
  verify_params.where = wire::Where::at_base(base);
  verify_params.known = std::vector<std::string>{};
  verify_params.only = std::move(verify);
  auto hashed = call_list(*client_, verify_params);
  if (!hashed) return std::unexpected(list_failed(endpoint_, hashed.error()));
  for (auto& [p, h] : tree_state_of(hashed->entries)) {
    auto it = run.remote.find(p);
    if (h.hash && it != run.remote.end() && it->second.size == h.size && it->second.mtime_ns == h.mtime_ns) it->second.hash = h.hash;
  }
  return {};
}

// Local files the walk left unhashed but the remote has as files: the plan compares their
// content (adopt, conflict or delta), so they are read now, as a save would read them.
// (Not only after this push's walk: a watched engine's kept read may hold a file an earlier
// push left unhashed and then failed to send.)
std::expected<void, Error> SyncEngine::hash_listed(PushRun& run) {
  State& st = *state_;
  std::vector<std::string> paths;
  for (const auto& [p, m] : run.scanned.entries)
    if (m.kind == EntryKind::file && !m.hash)
      if (auto r = run.remote.find(p); r != run.remote.end() && r->second.kind == EntryKind::file) paths.push_back(p);
  if (paths.empty()) return {};
  auto unstable = hash_now(target_.local_root, *st.ignore, *st.index, run.scanned, paths);
  if (!unstable) return std::unexpected(unstable.error());
  run.summary.unstable.insert(run.summary.unstable.end(), unstable->begin(), unstable->end());
  st.index_dirty = true;
  return {};
}

// 4. The plan (and the listing a fast plan turns out to need, and the mass-delete question).
std::expected<void, Error> SyncEngine::push_plan(PushRun& run) {
  State& st = *state_;
  const SyncOptions& o = run.o;
  const Manifest& manifest = *run.manifest;
  const TreeState& local = run.scanned.entries;
  PlanOptions& popt = run.popt;
  Plan& plan = run.plan;
  popt.deletes = o.deletes;
  popt.protect = &run.protect;
  popt.ignore = &*st.ignore;
  popt.skip.insert(run.scanned.unstable.begin(), run.scanned.unstable.end());
  popt.overwrite_conflicts = o.force;
  // Windows: the box's modes, not the laptop's (adopt_box_modes), against the remote view planned on.
  TreeState& adoptable = run.scanned.entries;
  auto box_modes = [&](const TreeState& remote_view) {
    if (!o.local_modes)
      adopt_box_modes(adoptable, remote_view, [&root = target_.local_root](const std::string& p) { return new_file_mode(root / p); });
  };
  // A save sees only its own paths; its deletes are weighed against the whole tree (an estimate
  // that counts directories too, kept O(1) so a save stays fast).
  if (run.save) popt.tree_files = manifest.entries.size();
  const bool reuse_empty = run.alias_manifest && run.summary.local_scan == "none" && !o.force && st.empty_plan &&
                           st.empty_plan->manifest_version == st.manifest_version && st.empty_plan->deletes == o.deletes;
  if (!reuse_empty) box_modes(run.alias_manifest ? manifest.entries : run.remote);
  plan = reuse_empty          ? Plan{}
         : run.alias_manifest ? plan_push(local, manifest, manifest.entries, popt)
                              : plan_push(local, run.plan_manifest, run.remote, popt);
  if (reuse_empty) plan.unchanged = st.empty_plan->unchanged;
  if (run.alias_manifest && !plan.nothing_to_do()) {
    run.remote = manifest.entries;
    run.plan_manifest = manifest;
  }
  bool listed = false;  // the whole remote was listed for this plan: its modes are current
  if (run.fast && needs_listing(plan, run.remote)) {
    listed = true;
    if (auto ok = list_remote(run); !ok) return std::unexpected(ok.error());
    if (run.listing_cancelled) return {};
    if (auto ok = hash_listed(run); !ok) return std::unexpected(ok.error());
    popt.skip.insert(run.scanned.unstable.begin(), run.scanned.unstable.end());
    if (run.save) keep_only(run.remote, o.only_paths);
    box_modes(run.remote);
    plan = plan_push(local, run.plan_manifest, run.remote, popt);
  }
  if (run.fast && !listed && !o.local_modes) {
    if (auto ok = refresh_box_modes(run); !ok) return std::unexpected(ok.error());
    plan = plan_push(local, run.plan_manifest, run.remote, popt);
  }
  if (plan.needs_confirmation && o.confirm_mass_delete &&
      o.confirm_mass_delete(plan.confirmation_reason, plan.held_deletes.size() + plan.held_rmdirs.size())) {
    popt.confirmed_mass_delete = true;
    plan = plan_push(local, run.plan_manifest, run.remote, popt);
  }
  st.empty_plan.reset();
  if (run.alias_manifest && st.watcher && run.scanned.unstable.empty() && plan.nothing_to_do() && plan.held_rmdirs.empty() &&
      plan.adopted.empty() && plan.forget.empty() && plan.protected_skipped.empty() && !plan.needs_confirmation)
    st.empty_plan = State::EmptyPlan{st.manifest_version, o.deletes, plan.unchanged};
  spdlog::debug("sync: planned: {} whole, {} delta, {} mkdirs", plan.send_whole.size(), plan.send_delta.size(), plan.mkdirs.size());
  run.summary.conflicts = plan.conflicts;
  run.summary.held_deletes = plan.held_deletes;
  run.summary.unchanged = plan.unchanged;
  return {};
}

// Windows, fast path: the manifest's modes may be stale (a `chmod +x` on the box changes neither
// size nor mtime, so the stamp does not see it). The box's modes of the files this plan writes
// are read now, in one stat round trip, and adopted, so a write keeps them.
std::expected<void, Error> SyncEngine::refresh_box_modes(PushRun& run) {
  std::vector<std::string> paths;
  for (const auto* v : {&run.plan.send_whole, &run.plan.send_delta, &run.plan.metadata})
    for (const auto& t : *v)
      if (run.remote.contains(t.path)) paths.push_back(t.path);
  if (paths.empty()) return {};
  wire::ListParams params;
  params.where = wire::Where::at_base(target_.remote_base);
  params.only = paths;
  params.sweep = false;
  auto listed = call_list(*client_, params);
  if (!listed) return std::unexpected(list_failed(endpoint_, listed.error()));
  for (const auto& [path, now] : tree_state_of(listed->entries))
    if (auto it = run.remote.find(path); it != run.remote.end() && it->second.kind == now.kind) it->second.mode = now.mode;
  adopt_box_modes(run.scanned.entries, run.remote,
                  [&root = target_.local_root](const std::string& p) { return new_file_mode(root / p); });
  return {};
}

// 5. The transfer (PushPipeline): replaces, then directories, files, links and attributes in
// flight together, then deletes; then what the plan adopted or forgot. Returns the requests
// that changed the remote.
std::uint64_t SyncEngine::push_transfer(PushRun& run) {
  State& st = *state_;
  const SyncOptions& o = run.o;
  const Plan& plan = run.plan;
  std::uint64_t total = plan.whole_bytes();
  for (const auto& t : plan.send_delta) total += t.local.size;
  PushPipeline pipeline(PushPipeline::Context{*client_, target_.local_root, target_.remote_base, target_.remote_root,
                                              run.scanned.entries, run.remote, run.plan_manifest, *run.manifest, *st.index,
                                              run.summary, o, run.popt.delta_min_size},
                        total);
  if (o.before_transfer) o.before_transfer();
  pipeline.replace(plan.replace);
  pipeline.queue_mkdirs(plan.mkdirs);
  pipeline.queue_whole(plan.send_whole);
  pipeline.queue_deltas(plan.send_delta);
  pipeline.queue_symlinks(plan.symlinks);
  pipeline.queue_metadata(plan.metadata);
  pipeline.run();
  // Hashes the batches took while reading: put into the walk's entries, so a watched engine's
  // next push sees them as hashed.
  auto late_hashes = pipeline.take_late_hashes();
  if (!late_hashes.empty()) st.index_dirty = true;
  for (auto& [p, h] : late_hashes)
    if (auto it = run.scanned.entries.find(p); it != run.scanned.entries.end()) it->second.hash = h;
  pipeline.delete_stale(plan.deletes, plan.rmdirs);
  for (const auto& p : plan.adopted) run.manifest->record(p, run.scanned.entries.at(p));
  for (const auto& p : plan.forget) run.manifest->forget(p);
  run.summary.cancelled = pipeline.cancelled();
  return pipeline.mutations();
}

// 6. Whether the manifest is now the whole of ferry's writes there: this push planned
// against it or a full listing, and the agent's generation moved by exactly our requests.
// A save that listed only its own paths proves nothing about the rest: unknown.
void SyncEngine::push_commit_manifest(PushRun& run, std::uint64_t ours) {
  State& st = *state_;
  Manifest* manifest = run.manifest;
  std::string end_epoch;
  std::uint64_t end_generation = 0;
  bool end_known = false;
  // Our writes alone moved the stamp from the start's by `ours`: else someone else wrote too.
  auto only_ours = [&](const wire::StateResult& s) {
    return !s.epoch.empty() && (run.start_epoch.empty() || s.epoch == run.start_epoch) && s.generation == run.start_generation + ours;
  };
  if (run.stamp_known && (run.fast || !run.save)) {
    if (ours == 0) {
      end_epoch = run.start_epoch, end_generation = run.start_generation, end_known = !run.start_epoch.empty();
    } else if (auto seen = client_->write_stamp(); seen && only_ours(*seen)) {
      // The last write's reply says so: no sync/state round trip (a foreign write after it only
      // makes the next push list).
      end_epoch = seen->epoch, end_generation = seen->generation, end_known = true;
    } else if (auto stamp = call_state(*client_, target_.remote_base); stamp) {
      end_epoch = stamp->epoch;
      end_generation = stamp->generation;
      end_known = only_ours(*stamp);
    }
  }
  if (end_known != !manifest->remote_epoch.empty() || end_epoch != manifest->remote_epoch ||
      end_generation != manifest->remote_generation || ours > 0 || !run.plan.adopted.empty() || !run.plan.forget.empty())
    ++st.manifest_version;
  manifest->remote_epoch = end_known ? end_epoch : "";
  manifest->remote_generation = end_known ? end_generation : 0;
}

// The sent-copy cache trimmed to what it still describes.
void SyncEngine::trim_sent_cache(const SyncOptions& o) {
  const fs::path cache_dir = target_.local_root / ".ferry" / "sent";
  std::error_code ec;
  if (!fs::is_directory(cache_dir, ec)) return;
  std::set<std::string> live;
  for (const auto& [p, m] : state_->manifest->entries)
    if (m.hash) live.insert(to_hex(*m.hash));
  std::uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(cache_dir, ec)) {
    if (!live.contains(e.path().filename().string()) || total > o.cache_max_bytes) fs::remove(e.path(), ec);
    else total += e.file_size(ec);
  }
}

}  // namespace ferry::sync

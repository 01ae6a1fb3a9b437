// The sync engine's pull: remote files (outputs, checkpoints, logs) brought into the local tree
// with the same delta machinery and the same safety rules as a push, mirrored (docs/sync.md
// "Pull"). Every local write goes through a directory descriptor walked from the root with
// O_NOFOLLOW, into a temp file beside the target, and is renamed only after its whole-file
// hash checks and the target is still what was planned against.
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/dir_at.hpp"
#include "common/file_times.hpp"
#include "common/full_io.hpp"
#include "common/temp_name.hpp"
#include "helper/remote/endpoint.hpp"
#include "helper/sync/patch_file.hpp"
#include "helper/sync/pull_prep.hpp"
#include "helper/sync/project_lock.hpp"
#include "helper/sync/sync_engine_state.hpp"
#include "helper/sync/windows_names.hpp"
#include "protocol/delta/delta.hpp"
#include "protocol/delta/parallel_signature.hpp"
#include "protocol/delta/patch.hpp"
#include "protocol/delta/signature.hpp"
#include "protocol/payload_codec.hpp"
#include "protocol/python_sources.hpp"
#include "protocol/scratch_pool.hpp"

namespace ferry::sync {
using namespace engine_parts;

namespace {

constexpr std::size_t kIoBlock = 1u << 20;
// sync/read requests in flight for one whole-file pull: enough to hide a round trip, few enough
// that a 10 GiB checkpoint needs tens of MiB, not 10 GiB.
constexpr unsigned kChunksInFlight = 4;
// Chunks in flight per bulk lane: one being read on the box while the other crosses.
constexpr unsigned kPullersPerLane = 2;
// Files up to this size come hashed in the pull's listing; a bigger one only where the plan
// needs its hash (hash_remote_files_with_local_copies): the box would otherwise read a new 10 GB
// checkpoint once, 3 s here, before its first byte moves. 16 MiB hashes in ~5 ms.
constexpr std::uint64_t kListHashAtMost = 16u << 20;
// A delta larger than this is not worth it (nor one reply): the file comes whole instead.
constexpr std::uint64_t kMaxPullDelta = 128u << 20;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }


std::string dir_of(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}
std::string name_of(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

// The directory `rel` under the root, opened one component at a time with O_NOFOLLOW: a local
// symlink (or file) anywhere on the way is refused, never followed. Missing components are made
// when `create` (0755), else the error is "missing".
std::expected<posix::UniqueFd, std::string> open_dir_chain(const fs::path& root, const std::string& rel, bool create) {
  posix::UniqueFd cur = posix::open_dir_path(root);
  if (cur.get() < 0) return std::unexpected(errno_text(("open " + root.string()).c_str()));
  std::size_t start = 0;
  while (start < rel.size()) {
    std::size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    const std::string comp = rel.substr(start, end - start);
    start = end + 1;
    if (comp.empty() || comp == ".") continue;
    if (comp == "..") return std::unexpected("'..' in a path");
    int next = posix::open_dir_nofollow(cur.get(), comp).release();
    if (next < 0 && errno == ENOENT) {
      if (!create) return std::unexpected(std::string("missing"));
      if (posix::mkdir_at(cur.get(), comp.c_str(), 0755) != 0 && errno != EEXIST) return std::unexpected(errno_text(("mkdir " + comp).c_str()));
      next = posix::open_dir_nofollow(cur.get(), comp).release();
    }
    if (next < 0) {
      if (errno == ELOOP || errno == ENOTDIR)
        return std::unexpected(fmt::format("'{}' is a symlink or a file locally; pull never writes through it", rel.substr(0, end)));
      return std::unexpected(fmt::format("open {}: {}", rel.substr(0, end), std::strerror(errno)));
    }
    cur.reset(next);
  }
  return cur;
}

// posix::pread_full / pwrite_full with the failure as a message: the count read (fewer at the end).
std::expected<std::size_t, std::string> pread_full(int fd, std::uint8_t* buf, std::size_t n, std::uint64_t offset) {
  const ssize_t k = posix::pread_full(fd, buf, n, offset);
  if (k < 0) return std::unexpected(errno_text("read"));
  return static_cast<std::size_t>(k);
}

std::expected<void, std::string> pwrite_full(int fd, const std::uint8_t* buf, std::size_t n, std::uint64_t offset) {
  if (posix::pwrite_full(fd, buf, n, offset) < 0) return std::unexpected(errno_text("write"));
  return {};
}

// Bytes [from, to) of `fd` into `h`, read in blocks (never the whole range in memory); the
// error, if any.
std::optional<std::string> hash_range(int fd, delta::Hash128Stream& h, std::uint64_t from, std::uint64_t to) {
  std::vector<std::uint8_t> buf(std::min<std::uint64_t>(to - from, kIoBlock));
  for (std::uint64_t at = from; at < to;) {
    auto got = pread_full(fd, buf.data(), std::min<std::uint64_t>(buf.size(), to - at), at);
    if (!got) return got.error();
    if (*got == 0) return std::string("shrank while being hashed");
    h.update(delta::Bytes(buf.data(), *got));
    at += *got;
  }
  return std::nullopt;
}

// The xxh3-128 of bytes [0, size) of `fd`.
std::expected<Hash128, std::string> hash_fd(int fd, std::uint64_t size) {
  delta::Hash128Stream h;
  if (auto bad = hash_range(fd, h, 0, size)) return std::unexpected(std::move(*bad));
  return h.digest();
}

// The whole-file hash of a pull's chunks as they land. Workers take chunks in order, so most
// complete the hashed prefix and are hashed from memory; one that came early waits and is read
// back from the temp file once the gap before it fills. Spares the read of the whole file again
// after its last chunk (a 1 GiB pull: ~0.3 s more on its critical path).
class PrefixHash {
 public:
  explicit PrefixHash(int fd) : fd_(fd) {}
  // Bytes [offset, offset + n) have been written; an error when reading back failed.
  std::optional<std::string> add(std::uint64_t offset, const std::uint8_t* data, std::size_t n) {
    std::lock_guard lock(mu_);
    if (offset != next_) {
      early_[offset] = n;
      return std::nullopt;
    }
    h_.update(delta::Bytes(data, n));
    next_ += n;
    for (auto it = early_.find(next_); it != early_.end(); it = early_.find(next_)) {
      if (auto bad = hash_range(fd_, h_, next_, next_ + it->second)) return "the temp file " + *bad;
      next_ += it->second;
      early_.erase(it);
    }
    return std::nullopt;
  }
  std::uint64_t hashed() const {
    std::lock_guard lock(mu_);
    return next_;
  }
  Hash128 digest() const {
    std::lock_guard lock(mu_);
    return h_.digest();
  }

 private:
  mutable std::mutex mu_;
  int fd_;
  delta::Hash128Stream h_;
  std::uint64_t next_ = 0;
  std::map<std::uint64_t, std::uint64_t> early_;  // offset -> length, written but not yet hashed
};

// Signs bytes [offset, offset + length) of the local file, reading it in blocks, in shares on
// several threads (a 1 GiB coarse signature is the pull's longest step on this side).
std::expected<std::vector<std::uint8_t>, std::string> sign_range(int fd, std::uint64_t file_size, delta::SignatureParams params,
                                                                 std::uint64_t offset, std::uint64_t length) {
  std::vector<std::uint8_t> out;
  const auto read_at = [fd](std::uint64_t at, std::uint8_t* buf, std::size_t n) { return posix::pread_full(fd, buf, n, at); };
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  // Read in pieces, not mapped: on some VMs a fresh mapping's first pass costs ~0.4 s per GiB
  // more than the reads.
  auto ok = delta::sign_in_parallel(read_at, params, offset, length, file_size, threads, out);
  if (!ok && ok.error().code == delta::DeltaErrc::truncated) return std::unexpected(std::string("the local file shrank while being signed"));
  if (!ok) return std::unexpected("signature: " + ok.error().message);
  return out;
}

// A temp file beside the target, removed unless renamed into place.
struct TempFile {
  int dir_fd = -1;
  std::string name;
  posix::UniqueFd fd;
  bool kept = false;
  ~TempFile() {
    if (!name.empty() && !kept) posix::unlink_at(dir_fd, name.c_str());
  }
};

std::expected<void, std::string> make_temp(TempFile& t, int dir_fd, const std::string& target_name) {
  t.dir_fd = dir_fd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string name = posix::temp_name(target_name);
    int fd = posix::open_at(dir_fd, name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      t.name = std::move(name);
      t.fd = posix::UniqueFd(fd);
      return {};
    }
    if (errno != EEXIST) return std::unexpected(errno_text("create temp file"));
  }
  return std::unexpected(std::string("create temp file: too many name collisions"));
}

// How one file's transfer ended, before the rename.
struct Fetched {
  enum class Status { ok, fallback, unstable, error, cancelled } status = Status::ok;
  std::string message;
  FileMeta got;
  std::uint64_t literal = 0, matched = 0, wire = 0;
};

Fetched failed(Fetched::Status s, std::string message, std::uint64_t wire = 0) {
  Fetched f;
  f.status = s;
  f.message = std::move(message);
  f.wire = wire;
  return f;
}

// A reply's agent error: vanished or changed remotely is the next pull's business (unstable).
Fetched from_agent_error(std::string_view method, const protocol::ResponseError& e, std::uint64_t wire) {
  const std::string code = e.data ? e.data->value("code", "") : "";
  if (code == "not_found" || e.message.find("changed while being read") != std::string::npos)
    return failed(Fetched::Status::unstable, e.message, wire);
  return failed(Fetched::Status::error, std::string(method) + ": " + e.message, wire);
}

// A mirror's deletes: files an earlier pull wrote (the manifest) under `paths` that the remote
// no longer offers go, each only while it is still what ferry wrote (hash as recorded).
void mirror_deletes(const fs::path& local_root, const TreeState& remote, const std::vector<std::string>& paths, Manifest& manifest,
                    SyncSummary& summary, bool dry_run) {
  std::vector<std::string> gone;
  for (const auto& [path, m] : manifest.entries)
    if (!remote.contains(path) && under_any(path, paths))
      gone.push_back(path);
  for (const auto& path : gone) {
    const FileMeta recorded = manifest.entries.at(path);
    auto dir = open_dir_chain(local_root, dir_of(path), false);
    posix::FileStat st;
    if (!dir || posix::stat_nofollow(dir->get(), name_of(path).c_str(), st) != 0) {
      if (!dry_run) manifest.forget(path);  // already gone locally
      continue;
    }
    std::optional<Hash128> local;
    if (st.kind == posix::FileKind::regular) {
      posix::UniqueFd fd(posix::open_at(dir->get(), name_of(path), O_RDONLY));
      if (fd.get() >= 0)
        if (auto h = hash_fd(fd.get(), st.size)) local = *h;
    }
    if (!local || !recorded.hash || *local != *recorded.hash) {
      summary.conflicts.push_back({path, ConflictKind::changed_remotely, "changed locally since ferry mirrored it; left as it is"});
      continue;
    }
    ++summary.files_deleted;
    if (dry_run) continue;
    if (posix::unlink_at(dir->get(), name_of(path).c_str()) != 0 && errno != ENOENT) {
      summary.errors.push_back(errno_text(("delete " + path).c_str()));
      continue;
    }
    manifest.forget(path);
  }
}

// The pull paths as given, made relative to the mapping ("" for all of it); one that leaves
// the mapping is refused.
std::expected<std::vector<std::string>, std::string> normalize_pull_paths(const std::vector<std::string>& paths_in) {
  std::vector<std::string> paths;
  for (auto p : paths_in) {
    while (p.starts_with("./")) p.erase(0, 2);
    while (p.size() > 1 && p.ends_with('/')) p.pop_back();
    if (p.starts_with('/') || p == ".." || p.starts_with("../") || p.find("/../") != std::string::npos || p.ends_with("/.."))
      return std::unexpected("pull: '" + p + "' must be a path inside the mapping");
    paths.push_back(p == "." ? "" : p);
  }
  if (paths.empty()) paths.push_back("");
  return paths;
}

// What a file job needs; `local_*` is the target as planned against, re-checked at the rename.
struct PullFile {
  std::string path;
  FileMeta remote;
  bool local_exists = false;
  std::uint64_t local_size = 0;
  std::int64_t local_mtime_ns = 0;
  bool delta = false;
};

// What one pull carries from stage to stage.
struct PullRun {
  PullRun(SyncClient& c, const SyncTarget& t, const SyncOptions& options, Manifest& m, FileIndex& i)
      : client(c), endpoint(c.endpoint()), target(t), o(options), manifest(m), index(i) {
    summary.dry_run = o.dry_run;
    prog.manifest = &manifest;
    prog.summary = &summary;
    prog.options = &o;
  }
  // Where every request reads: the mapping (base) or a read-only source outside it.
  wire::Where where() const {
    return target.remote_source.empty() ? wire::Where::at_base(target.remote_base) : wire::Where::at_source(target.remote_source);
  }
  bool cancelled() const { return o.cancelled && o.cancelled(); }

  SyncClient& client;
  remote::Endpoint& endpoint;
  const SyncTarget& target;
  const SyncOptions& o;
  Manifest& manifest;
  FileIndex& index;
  std::vector<std::string> paths;  // normalized: relative to the mapping, "" for all of it
  SyncSummary summary;
  Progress prog;                   // the summary's lock, and the bytes to receive
  TreeState remote;
  std::vector<PullFile> files;     // what the transfer fetches
  std::atomic<bool> index_changed{false};
  std::unique_ptr<PullPrep> prep;  // big local copies named outright, read during the listing
};

// Local copies the pull names outright (not under a directory: those could be many, most of them
// unchanged) big enough to take a two-level delta, read while the listing is out.
constexpr std::size_t kMaxPrepared = 16;

std::unique_ptr<PullPrep> start_pull_prep(const PullRun& run) {
  std::vector<PullPrep::Job> jobs;
  for (const auto& p : run.paths) {
    if (p.empty() || jobs.size() >= kMaxPrepared) continue;
    auto dir = open_dir_chain(run.target.local_root, dir_of(p), false);
    if (!dir) continue;
    posix::UniqueFd fd(posix::open_at(dir->get(), name_of(p), O_RDONLY));
    posix::FileStat st;
    if (fd.get() < 0 || posix::stat_fd(fd.get(), st) != 0 || st.kind != posix::FileKind::regular) continue;
    const auto size = st.size;
    if (size < kTwoLevelAbove || size > PlanOptions{}.delta_max_size) continue;
    jobs.push_back(PullPrep::Job{p, std::move(fd), delta::SignatureParams{kCoarseBlock, 8}});
  }
  if (jobs.empty()) return nullptr;
  // One thread hashes; the rest sign. The listing it overlaps keeps the remote (or, on
  // loopback, one core here) busy.
  const unsigned signers = std::clamp(std::thread::hardware_concurrency(), 2u, 4u) - 1;
  return std::make_unique<PullPrep>(std::move(jobs), signers);
}

// The agent calls of a pull.
std::expected<wire::ReadDeltaResult, protocol::ResponseError> call_read_delta(PullRun& run, const wire::ReadDeltaParams& req) {
  return run.client.read_delta(req, kBigCallTimeout);
}

std::expected<wire::ReadResult, protocol::ResponseError> call_read(PullRun& run, const std::string& path, std::uint64_t offset) {
  return run.client.read(wire::ReadParams{run.where(), path, offset, kReadChunk}, kBigCallTimeout);
}

// 1. The remote listing (hashes under the pulled paths), less what a read-only source may not
// serve and what pull_leave_out leaves out. False: cancelled between its pages.
std::expected<bool, Error> list_for_pull(PullRun& run) {
  wire::ListParams params;
  params.where = run.where();
  params.known.emplace();
  params.known->reserve(run.manifest.entries.size());
  for (const auto& [p, m] : run.manifest.entries) params.known->push_back(p);
  params.hash_under = run.paths;
  params.hash_at_most = kListHashAtMost;
  auto listed = list_remote_paged(run.client, std::move(params), run.o);
  if (!listed) return std::unexpected(listed.error());
  if (listed->cancelled) return false;
  run.remote = std::move(listed->entries);
  // A read-only source serves Python sources only; anything else in its reply is not trusted.
  if (!run.target.remote_source.empty())
    std::erase_if(run.remote, [](const auto& e) { return e.second.kind != EntryKind::file || !protocol::is_python_source_file(e.first); });
  // Another mapping's folder nested in this one is that mapping's to pull.
  for (const auto& dir : run.target.nested)
    std::erase_if(run.remote, [&](const auto& e) { return e.first == dir || e.first.starts_with(dir + "/"); });
  if (run.o.pull_leave_out) {
    std::vector<std::pair<std::string, std::uint64_t>> offered;
    for (const auto& [path, R] : run.remote)
      if (R.kind == EntryKind::file) offered.emplace_back(path, R.size);
    for (const auto& gone : run.o.pull_leave_out(offered)) run.remote.erase(gone);
  }
  return true;
}

// 1b. The hashes the listing left out (files over kListHashAtMost) where the plan needs them: a
// local file of that path exists, so the plan compares contents. Those few are hashed now, in
// one `only` listing; a new file needs none (its chunks are checked against the listing's size
// and mtime, as rsync checks them, and its hash is taken here as it lands).
std::expected<void, Error> hash_remote_files_with_local_copies(PullRun& run) {
  std::vector<std::string> want;
  for (const auto& [path, R] : run.remote) {
    if (R.kind != EntryKind::file || R.hash) continue;
    if (!under_any(path, run.paths)) continue;
    std::error_code ec;
    if (fs::symlink_status(run.target.local_root / path, ec).type() == fs::file_type::regular)
      want.push_back(path);
  }
  if (want.empty()) return {};
  wire::ListParams params;
  params.where = run.where();
  params.known = std::vector<std::string>{};  // none known: every one is hashed
  params.only = std::move(want);
  auto hashed = run.client.list(params, kBigCallTimeout);
  if (!hashed) return std::unexpected(list_failed(run.endpoint, hashed.error()));
  for (auto& [p, h] : tree_state_of(hashed->entries)) {
    auto it = run.remote.find(p);
    // Changed since the listing: left unhashed, so the plan reports it as a conflict or fetches it.
    if (h.hash && it != run.remote.end() && it->second.size == h.size && it->second.mtime_ns == h.mtime_ns) it->second.hash = h.hash;
  }
  return {};
}

// A remote directory: made locally (0755 on the way, its own mode at the end) unless a file is there.
void pull_directory(PullRun& run, const std::string& path, const FileMeta& R, bool exists, const posix::FileStat& st) {
  if (exists && st.kind != posix::FileKind::directory) {
    run.summary.conflicts.push_back({path, ConflictKind::kind_mismatch, "a local file where the remote has a directory"});
  } else if (!exists && !run.o.dry_run) {
    auto made = open_dir_chain(run.target.local_root, path, true);
    if (!made) run.summary.errors.push_back("mkdir '" + path + "': " + made.error());
    else posix::chmod_fd(made->get(), R.mode & 07777);
    ++run.summary.dirs_made;
  }
}

// A remote symlink: made as a link, never followed (its target may well point outside the root).
void pull_symlink(PullRun& run, const std::string& path, const FileMeta& R, int parent_fd, bool exists, const posix::FileStat& st) {
  const std::string name = name_of(path);
  if (exists && st.kind == posix::FileKind::symlink) {
    if (posix::read_link_at(parent_fd, name.c_str(), static_cast<std::size_t>(st.size)) == R.link_target) return;
  }
  if (exists && st.kind != posix::FileKind::symlink && !run.o.force) {
    run.summary.conflicts.push_back({path, ConflictKind::kind_mismatch, "a local file where the remote has a symlink"});
    return;
  }
  ++run.summary.files_sent;
  if (run.o.dry_run) return;
  auto dir = open_dir_chain(run.target.local_root, dir_of(path), true);
  if (!dir) {
    run.summary.errors.push_back("symlink '" + path + "': " + dir.error());
    return;
  }
  const std::string tmp = posix::temp_name(name);
  if (posix::symlink_at(R.link_target, dir->get(), tmp.c_str()) != 0 || posix::rename_at(dir->get(), tmp.c_str(), dir->get(), name.c_str()) != 0) {
    run.summary.errors.push_back("symlink '" + path + "': " + std::strerror(errno));
    posix::unlink_at(dir->get(), tmp.c_str());
  } else {
    run.manifest.record(path, R);
  }
}

// The local file's hash: from the index when unchanged since it was last hashed (a 1 GiB
// checkpoint costs a stat, not a second read), else read, and stored only when the file did not
// move while read (the index is trusted later).
std::optional<Hash128> local_hash_of(PullRun& run, const std::string& path, int parent_fd, const posix::FileStat& st) {
  std::optional<Hash128> local_hash = run.index.lookup(path, index_key_of(st));
  if (!local_hash && run.prep && run.prep->has(path))
    if (auto read = run.prep->wait_for(path); read && read->key == index_key_of(st)) {
      run.index.store(path, read->key, read->hash, read->read_at_ns);
      run.index_changed = true;
      return read->hash;
    }
  posix::UniqueFd fd(local_hash ? -1 : posix::open_at(parent_fd, name_of(path), O_RDONLY));
  posix::FileStat after;
  const std::int64_t hashed_at = now_ns();
  if (fd.get() >= 0)
    if (auto h = hash_fd(fd.get(), st.size)) {
      local_hash = *h;
      if (posix::stat_fd(fd.get(), after) == 0 && index_key_of(after) == index_key_of(st)) {
        run.index.store(path, index_key_of(st), *h, hashed_at);
        run.index_changed = true;
      }
    }
  return local_hash;
}

// A remote file, compared with the local one by content: unchanged, a conflict (changed
// locally since ferry last synced it, unless forced), or queued into run.files.
void plan_pull_file(PullRun& run, const std::string& path, const FileMeta& R, int parent_fd, bool exists, const posix::FileStat& st) {
  const std::uint64_t delta_min_size = PlanOptions{}.delta_min_size;
  const std::uint64_t delta_max_size = PlanOptions{}.delta_max_size;  // the agent builds a delta in memory
  if (exists && st.kind == posix::FileKind::directory) {
    run.summary.conflicts.push_back({path, ConflictKind::kind_mismatch, "a local directory where the remote has a file"});
    return;
  }
  std::optional<Hash128> local_hash;
  if (exists && st.kind == posix::FileKind::regular) local_hash = local_hash_of(run, path, parent_fd, st);
  if (local_hash && R.hash && *local_hash == *R.hash) {
    ++run.summary.unchanged;
    if (!run.o.dry_run) run.manifest.record(path, R);
    return;
  }
  if (exists && !run.o.force) {
    auto m = run.manifest.entries.find(path);
    if (m == run.manifest.entries.end() || !m->second.hash || !local_hash || *m->second.hash != *local_hash) {
      run.summary.conflicts.push_back({path, ConflictKind::changed_remotely,
                                       "the local file differs from what ferry last synced (pull --force takes the remote's)"});
      return;
    }
  }
  run.prog.total += R.size;
  if (run.o.dry_run) {
    ++run.summary.files_sent;
    run.summary.bytes_literal += R.size;
    return;
  }
  PullFile f{path, R, exists, exists ? st.size : 0, exists ? st.mtime_ns : 0, false};
  f.delta = exists && st.kind == posix::FileKind::regular && f.local_size >= delta_min_size && R.size >= delta_min_size &&
            f.local_size <= delta_max_size && R.size <= delta_max_size;
  run.files.push_back(std::move(f));
}

// 2. The plan: every listed entry under the pulled paths against the local tree (directories
// and symlinks made now, files queued), then the mirror's deletes.
void plan_pull(PullRun& run) {
  const fs::path& root = run.target.local_root;
  std::size_t matched_any = 0;
  // A Windows laptop: names it cannot hold, or that clash by case among those pulled, are
  // reported, never written or renamed (kept in run.remote, so a mirror does not delete them).
  std::map<std::string, std::string> unholdable;
  if (run.o.windows_local_names) {
    std::vector<std::string> pulled;
    for (const auto& [path, R] : run.remote)
      if (under_any(path, run.paths) && path != ".ferry" && !path.starts_with(".ferry/")) pulled.push_back(path);
    unholdable = windows_path_problems(pulled);
  }
  for (const auto& [path, R] : run.remote) {
    if (!under_any(path, run.paths)) continue;
    // Ignore rules do not apply (asking for outputs/ means wanting what is there, ignored or
    // not), but ferry's own state never comes back.
    if (path == ".ferry" || path.starts_with(".ferry/")) continue;
    ++matched_any;
    if (auto bad = unholdable.find(path); bad != unholdable.end()) {
      run.summary.errors.push_back("pull '" + path + "': not written: " + bad->second + "; ferry does not rename files");
      continue;
    }
    auto parent = open_dir_chain(root, dir_of(path), false);
    if (!parent && parent.error() != "missing") {
      run.summary.errors.push_back("pull '" + path + "': " + parent.error());
      continue;
    }
    posix::FileStat st;
    const bool exists = parent && posix::stat_nofollow(parent->get(), name_of(path).c_str(), st) == 0;
    if (R.kind == EntryKind::dir) pull_directory(run, path, R, exists, st);
    else if (R.kind == EntryKind::symlink) pull_symlink(run, path, R, parent ? parent->get() : -1, exists, st);
    else plan_pull_file(run, path, R, parent ? parent->get() : -1, exists, st);
  }
  for (const auto& p : run.paths)
    if (!p.empty() && !run.remote.contains(p) && matched_any == 0)
      run.summary.errors.push_back("'" + p + "' is not under " + run.target.remote_root + " on " + run.endpoint.description() +
                                   " (pull paths are relative to the mapping root; `ferry pull .` brings back all of it)");
  if (run.o.pull_mirror) mirror_deletes(root, run.remote, run.paths, run.manifest, run.summary, run.o.dry_run);
}

// 3. The transfer: each queued file fetched into a temp file beside its target (as a delta
// against the local copy where one is worth it, else whole), checked, and renamed into place;
// options.in_flight files at once.
class PullPipeline {
 public:
  explicit PullPipeline(PullRun& run) : run_(run) {}

  void run() {
    std::vector<std::function<void()>> jobs;
    for (const PullFile& pf : run_.files) jobs.push_back([this, fp = &pf] { receive(*fp); });
    run_parallel(jobs, run_.o.in_flight, run_.o.cancelled);
  }

 private:
  void receive(const PullFile& f);
  bool still_as_planned(const PullFile& f, int dir_fd);
  void install(const PullFile& f, int dir_fd, TempFile& tmp, const Fetched& r);
  Fetched fetch_delta(const PullFile& f, int dir_fd, int tmp_fd);
  std::expected<std::vector<std::uint8_t>, std::string> prepared_signature(const PullFile& f, int base_fd, delta::SignatureParams params);
  struct Whole;
  Fetched fetch_whole(const PullFile& f, int tmp_fd);
  void fetch_chunks(Whole& w, std::optional<std::size_t> lane);
  std::optional<Fetched> fetch_chunk(Whole& w, std::uint64_t offset, std::optional<std::size_t>& lane,
                                     std::vector<std::uint8_t>& scratch);

  PullRun& run_;
};

// One file: fetched (the delta path, falling back to the whole file), then installed unless
// the local target changed meanwhile (a conflict: the user's bytes stay, the temp file goes).
void PullPipeline::receive(const PullFile& f) {
  Progress& prog = run_.prog;
  const std::string name = name_of(f.path);
  auto dir = open_dir_chain(run_.target.local_root, dir_of(f.path), true);
  if (!dir) return prog.error(fmt::format("pull '{}': {}", f.path, dir.error()));
  TempFile tmp;
  if (auto made = make_temp(tmp, dir->get(), name); !made) return prog.error(fmt::format("pull '{}': {}", f.path, made.error()));
  Fetched r = f.delta ? fetch_delta(f, dir->get(), tmp.fd.get()) : failed(Fetched::Status::fallback, "");
  if (r.status == Fetched::Status::fallback) {
    if (f.delta) spdlog::debug("pull '{}': whole file ({})", f.path, r.message);
    const std::uint64_t spent = r.wire;
    if (posix::truncate_fd(tmp.fd.get(), 0) != 0) return prog.error(fmt::format("pull '{}': {}", f.path, errno_text("truncate")));
    r = fetch_whole(f, tmp.fd.get());
    r.wire += spent;
  } else if (r.status == Fetched::Status::ok) {
    prog.advance(f.remote.size);
  }
  {
    std::lock_guard lock(prog.mu);
    run_.summary.bytes_on_wire += r.wire;
  }
  if (!still_as_planned(f, dir->get())) {
    std::lock_guard lock(prog.mu);
    run_.summary.conflicts.push_back({f.path, ConflictKind::changed_remotely, "the local file changed during the pull; it was left as it is"});
    return;
  }
  if (r.status == Fetched::Status::cancelled) return;  // the summary says cancelled; the next pull resumes
  if (r.status == Fetched::Status::unstable) {
    std::lock_guard lock(prog.mu);
    run_.summary.unstable.push_back(f.path);
    return;
  }
  if (r.status != Fetched::Status::ok) return prog.error(fmt::format("pull '{}': {}", f.path, r.message));
  install(f, dir->get(), tmp, r);
}

// The local target is still what was planned against (a user edit during the pull is not).
bool PullPipeline::still_as_planned(const PullFile& f, int dir_fd) {
  posix::FileStat now;
  const bool now_exists = posix::stat_nofollow(dir_fd, name_of(f.path).c_str(), now) == 0;
  return now_exists == f.local_exists && (!now_exists || (now.size == f.local_size && now.mtime_ns == f.local_mtime_ns));
}

// The temp file given the remote's mode and mtime, synced and renamed over the target; then
// recorded in the index and the manifest.
void PullPipeline::install(const PullFile& f, int dir_fd, TempFile& tmp, const Fetched& r) {
  Progress& prog = run_.prog;
  const std::string name = name_of(f.path);
  if (posix::chmod_fd(tmp.fd.get(), r.got.mode) != 0 || (errno = posix::set_mtime_fd(tmp.fd.get(), r.got.mtime_ns)) != 0 ||
      posix::sync_fd(tmp.fd.get()) != 0)
    return prog.error(fmt::format("pull '{}': {}", f.path, errno_text("set attributes")));
  if (posix::rename_at(dir_fd, tmp.name.c_str(), dir_fd, name.c_str()) != 0)
    return prog.error(fmt::format("pull '{}': {}", f.path, errno_text("rename")));
  tmp.kept = true;
  posix::sync_fd(dir_fd);  // best effort, as write_file_atomically
  if (posix::FileStat done; posix::stat_fd(tmp.fd.get(), done) == 0) {
    run_.index.store(f.path, index_key_of(done), *r.got.hash, now_ns());
    run_.index_changed = true;
  }
  std::lock_guard lock(prog.mu);
  run_.manifest.record(f.path, r.got);
  ++run_.summary.files_sent;  // counted once received: a conflict or a failure is not a file pulled
  run_.summary.bytes_literal += r.literal;
  run_.summary.bytes_matched += r.matched;
}

// The signature read during the listing, when it was of this very file (same inode, size, mtime
// and mode as the base now open) with these parameters; else an error, and the caller signs.
std::expected<std::vector<std::uint8_t>, std::string> PullPipeline::prepared_signature(const PullFile& f, int base_fd,
                                                                                      delta::SignatureParams params) {
  posix::FileStat st;
  if (!run_.prep || !run_.prep->has(f.path) || posix::stat_fd(base_fd, st) != 0) return std::unexpected(std::string("not prepared"));
  auto read = run_.prep->wait_for(f.path);
  if (!read || !(read->key == index_key_of(st)) || read->params.block_size != params.block_size || read->params.strong_len != params.strong_len)
    return std::unexpected(std::string("not prepared"));
  spdlog::debug("pull '{}': signature read during the listing", f.path);
  return std::move(read->signature);
}

// The delta path: the local copy's signature (two levels above kTwoLevelAbove, as push), the
// agent's delta back, patched from the local file into `tmp`.
Fetched PullPipeline::fetch_delta(const PullFile& f, int dir_fd, int tmp_fd) {
  const std::string name = name_of(f.path);
  posix::UniqueFd base_fd(posix::open_at(dir_fd, name, O_RDONLY));
  if (base_fd.get() < 0) return failed(Fetched::Status::fallback, errno_text("open the local copy"));
  // The size kept (an edit in place): the local copy goes into the temp file while the delta is
  // asked for, and the delta's unmoved ranges are then there already.
  std::optional<BaseCopy> copy;
  if (f.remote.size == f.local_size && f.local_size >= run_.o.prepare_above) copy.emplace(base_fd.get(), tmp_fd, f.local_size);
  const bool two_level = f.local_size >= kTwoLevelAbove;
  const delta::SignatureParams params = two_level ? delta::SignatureParams{kCoarseBlock, 8} : delta::default_params(f.local_size);
  auto sig = prepared_signature(f, base_fd.get(), params);
  if (!sig) sig = sign_range(base_fd.get(), f.local_size, params, 0, f.local_size);
  if (!sig) return failed(Fetched::Status::fallback, sig.error());
  spdlog::debug("pull '{}': local copy signed", f.path);
  const std::string method(wire::method::kReadDelta);
  wire::ReadDeltaParams req{run_.where(), f.path, std::move(*sig), std::nullopt, two_level, kMaxPullDelta};
  std::uint64_t wire_bytes = req.signature.size();
  auto reply = call_read_delta(run_, req);
  if (!reply) {
    if (reply.error().code == protocol::error_code::kMethodNotFound) return failed(Fetched::Status::fallback, "an agent without " + method);
    return from_agent_error(method, reply.error(), wire_bytes);
  }
  spdlog::debug("pull '{}': first readDelta answered", f.path);
  if (reply->ranges) {
    // The second level: fine signatures of the ranges no coarse block matched.
    std::vector<wire::Bytes> fine;
    for (const auto& [off, len] : *reply->ranges) {
      if (off > f.local_size || len > f.local_size - off || len == 0)
        return failed(Fetched::Status::error, method + ": a range outside the local file", wire_bytes);
      auto fsig = sign_range(base_fd.get(), f.local_size, delta::SignatureParams{kFineBlock, 8}, off, len);
      if (!fsig) return failed(Fetched::Status::fallback, fsig.error(), wire_bytes);
      wire_bytes += fsig->size();
      fine.push_back(std::move(*fsig));
    }
    wire_bytes += req.signature.size();  // the coarse signature goes again: the agent keeps no state between requests
    req.ranges_only = false;
    req.fine = std::move(fine);
    reply = call_read_delta(run_, req);
    if (!reply) return from_agent_error(method, reply.error(), wire_bytes);
  }
  if (reply->too_big) return failed(Fetched::Status::fallback, "delta larger than the file is worth", wire_bytes);
  if (!reply->delta) return failed(Fetched::Status::error, method + ": no delta in the reply", wire_bytes);
  const auto& packed = *reply->delta;
  wire_bytes += packed.size();
  Fetched out;
  out.wire = wire_bytes;
  out.got = f.remote;
  out.got.size = reply->size;
  out.got.mtime_ns = reply->mtime_ns;
  out.got.mode = reply->mode & 07777;
  out.got.hash = reply->hash;
  auto d = protocol::decompress_payload(packed.data(), packed.size(), reply->delta_size, kMaxRequestPayload);
  if (!d) return failed(Fetched::Status::error, method + ": " + d.error(), wire_bytes);
  delta::DeltaHeader expect{f.local_size, out.got.size, *out.got.hash};
  spdlog::debug("pull '{}': delta received", f.path);
  const bool in_place = copy && copy->ready();
  if (copy) spdlog::debug("pull '{}': local copy made ahead {}", f.path, in_place ? "used" : "not usable");
  if (copy && !in_place && posix::truncate_fd(tmp_fd, 0) != 0) return failed(Fetched::Status::error, errno_text("truncate"), wire_bytes);
  auto stats = patch_to_fd(*d, base_fd.get(), f.local_size, tmp_fd, expect, {}, in_place);
  if (!stats) return failed(Fetched::Status::error, stats.error(), wire_bytes);
  spdlog::debug("pull '{}': patched", f.path);
  out.literal = stats->literal_bytes;
  out.matched = stats->copied_bytes;
  return out;
}

// One whole-file fetch's shared state: its workers each take the next chunk.
struct PullPipeline::Whole {
  const PullFile& f;
  int tmp_fd;
  PrefixHash prefix;
  std::uint64_t chunks;
  std::atomic<std::uint64_t> next{0}, wire{0};
  std::atomic<bool> lane_up{false};  // a lane answered: the link's own workers take no more chunks
  std::mutex mu{};
  std::optional<Fetched> failure{};
  std::optional<std::uint32_t> mode{};
};

// The whole-file path: several sync/read chunks in flight, each written where it belongs
// with pwrite, so memory stays at kChunksInFlight chunks (and kPullersPerLane per lane) whatever
// the file size. A big file on a link whose bulk lanes cost less CPU per byte (OpenSSH lanes on
// a short link) moves to the lanes once one is up; a lane that fails leaves its chunk, and its
// workers, on the link.
Fetched PullPipeline::fetch_whole(const PullFile& f, int tmp_fd) {
  const std::uint64_t size = f.remote.size;
  Whole w{f, tmp_fd, PrefixHash(tmp_fd), std::max<std::uint64_t>(1, (size + kReadChunk - 1) / kReadChunk)};
  const bool use_lanes = size > run_.o.stream_above && size >= run_.o.cpu_lanes_above && run_.client.lanes_save_cpu();
  const std::size_t lanes = use_lanes ? run_.client.bulk_lanes() : 0;
  w.lane_up = lanes > 0 && run_.client.live_lanes() > 0;  // lanes already up: the link carries none of it
  {
    std::vector<std::jthread> pool;
    for (std::size_t i = 0; i < lanes * kPullersPerLane && i < w.chunks; ++i)
      pool.emplace_back([this, &w, lane = i % lanes] { fetch_chunks(w, lane); });
    const auto width = static_cast<unsigned>(std::min<std::uint64_t>(kChunksInFlight, w.chunks));
    for (unsigned t = 1; t < width; ++t) pool.emplace_back([this, &w] { fetch_chunks(w, std::nullopt); });
    fetch_chunks(w, std::nullopt);
  }
  if (w.failure) {
    w.failure->wire = w.wire.load();
    return *w.failure;
  }
  auto h = w.prefix.hashed() == size ? std::expected<Hash128, std::string>(w.prefix.digest()) : hash_fd(tmp_fd, size);
  if (!h) return failed(Fetched::Status::error, h.error(), w.wire.load());
  if (f.remote.hash && *h != *f.remote.hash) return failed(Fetched::Status::unstable, "changed on the remote while being read", w.wire.load());
  Fetched out;
  out.wire = w.wire.load();
  out.got = f.remote;
  out.got.hash = *h;
  out.got.mode = w.mode.value_or(f.remote.mode) & 07777;
  out.literal = size;
  return out;
}

// One worker: chunks until none is left or one failed. One that starts on the link stops once a
// lane is up; a lane's worker whose lane fails goes on over the link (the link's own may be gone).
void PullPipeline::fetch_chunks(Whole& w, std::optional<std::size_t> lane) {
  const bool yields = !lane;
  // Zstd frames decompress here, reused chunk after chunk: a fresh 8 MiB per chunk was zeroed and
  // faulted in every time.
  std::vector<std::uint8_t> scratch;
  while (!(yields && w.lane_up)) {
    {
      std::lock_guard lock(w.mu);
      if (w.failure) return;
    }
    const std::uint64_t i = w.next.fetch_add(1);
    if (i >= w.chunks) return;
    auto fail = run_.cancelled() ? std::optional(failed(Fetched::Status::cancelled, "cancelled")) : fetch_chunk(w, i * kReadChunk, lane, scratch);
    if (fail) {
      std::lock_guard lock(w.mu);
      if (!w.failure) w.failure = std::move(*fail);
      return;
    }
  }
}

// One chunk at `offset` read (on `lane` while it works, else on the link) and written into the
// temp file; the failure, if any.
std::optional<Fetched> PullPipeline::fetch_chunk(Whole& w, std::uint64_t offset, std::optional<std::size_t>& lane,
                                                 std::vector<std::uint8_t>& scratch) {
  const PullFile& f = w.f;
  const std::uint64_t size = f.remote.size;
  const wire::ReadParams req{run_.where(), f.path, offset, kReadChunk};
  auto chunk = lane ? run_.client.read_on_lane(*lane, req, kBigCallTimeout) : call_read(run_, f.path, offset);
  if (lane) {
    if (chunk) w.lane_up = true;
    else {
      spdlog::debug("pull: {} chunk at {}: lane {}: {}; over the link", f.path, offset, *lane, chunk.error().message);
      lane.reset();
      chunk = call_read(run_, f.path, offset);
    }
  }
  const std::string_view method = wire::method::kRead;
  if (!chunk) return from_agent_error(method, chunk.error(), 0);
  const auto& data = chunk->data;
  w.wire += data.size();
  // Every chunk must come from the file the listing saw: else the parts could be of different
  // versions, and the next pull settles it.
  if (chunk->size != size || chunk->mtime_ns != f.remote.mtime_ns)
    return failed(Fetched::Status::unstable, "changed on the remote since it was listed");
  const std::uint64_t want = std::min<std::uint64_t>(kReadChunk, size - std::min(size, offset));
  const std::uint64_t raw_size = chunk->raw_size;
  if (raw_size != want) return failed(Fetched::Status::error, fmt::format("{}: {} bytes at {}, {} expected", method, raw_size, offset, want));
  // A stored chunk is written as it came, a zstd frame from the worker's buffer.
  auto bytes = protocol::payload_bytes(data, chunk->stored, raw_size, scratch, kMaxRequestPayload);
  if (!bytes) return failed(Fetched::Status::error, fmt::format("{}: {}", method, bytes.error()));
  // The chunk's buffer goes back to the agent link's pool once its bytes are written (a zstd
  // frame's before the write: it is not needed), so the next chunk lands in pages already in.
  if (!chunk->stored) protocol::received_chunks().put(std::move(chunk->data));
  const std::span<const std::uint8_t> raw = *bytes;
  if (auto wr = pwrite_full(w.tmp_fd, raw.data(), raw.size(), offset); !wr) return failed(Fetched::Status::error, wr.error());
  if (auto bad = w.prefix.add(offset, raw.data(), raw.size())) return failed(Fetched::Status::error, *bad);
  if (chunk->stored) protocol::received_chunks().put(std::move(chunk->data));
  {
    std::lock_guard lock(w.mu);
    w.mode = chunk->mode;
  }
  run_.prog.advance(raw.size());
  return std::nullopt;
}

}  // namespace

std::expected<SyncSummary, Error> SyncEngine::pull(const std::vector<std::string>& paths_in, const SyncOptions& o) {
  auto lock = ProjectLock::acquire(target_.local_root, o.waiting, o.cancelled);
  if (!lock) return std::unexpected(lock.error());
  const auto t0 = Clock::now();
  auto paths = normalize_pull_paths(paths_in);  // checks the caller's paths only: its string is invalid_input
  if (!paths) return std::unexpected(Error{ErrorKind::invalid_input, std::move(paths.error())});

  std::lock_guard state_lock(state_->mu);
  if (!state_->manifest) {
    auto loaded = load_manifest(manifest_path());
    if (!loaded) return std::unexpected(Error{ErrorKind::io, std::move(loaded.error())});
    state_->manifest = std::move(*loaded);
  }
  state_->manifest->remote_root = target_.remote_root;
  // The hash index push keeps: a local copy unchanged since it was last hashed is not read again
  // (a 1 GiB checkpoint costs a stat, not a second read), and what pull writes is stored in it.
  if (!state_->index) {
    auto index = FileIndex::load(default_index_path(target_.local_root));
    if (!index) spdlog::warn("sync: index unreadable ({}); rehashing", index.error());
    state_->index.emplace(index ? std::move(*index) : FileIndex{});
  }
  PullRun run(*client_, target_, o, *state_->manifest, *state_->index);
  run.paths = std::move(*paths);
  if (!o.dry_run) run.prep = start_pull_prep(run);
  auto listed = list_for_pull(run);
  if (!listed) return std::unexpected(listed.error());
  spdlog::debug("pull: remote listed");
  if (!*listed) {
    run.summary.cancelled = true;
    run.summary.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return std::move(run.summary);
  }
  if (auto hashed = hash_remote_files_with_local_copies(run); !hashed) return std::unexpected(hashed.error());
  plan_pull(run);
  spdlog::debug("pull: planned, {} files", run.files.size());
  if (o.before_transfer && !o.dry_run) o.before_transfer();
  PullPipeline pipeline(run);
  pipeline.run();

  if (run.index_changed) state_->index_dirty = true;
  protocol::received_chunks().clear();  // megabytes a quiet link does not need
  run.summary.cancelled = run.cancelled();
  if (!o.dry_run) {
    ++state_->manifest_version;
    {
      std::lock_guard lock(state_->persist_mu);
      state_->pending = true;
    }
    state_->persist_cv.notify_all();
  }
  run.summary.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return std::move(run.summary);
}

}  // namespace ferry::sync

// The sync engine's pull: remote files (outputs, checkpoints, logs) brought into the local tree
// with the same delta machinery and the same safety rules as a push, mirrored (docs/sync.md
// "Pull"). Every local write goes through a directory descriptor walked from the root with
// O_NOFOLLOW, into a temp file beside the target, and is renamed only after its whole-file
// hash checks and the target is still what was planned against.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include <spdlog/spdlog.h>

#include "helper/remote/endpoint.hpp"
#include "helper/sync/project_lock.hpp"
#include "helper/sync/sync_engine_state.hpp"
#include "protocol/delta/delta.hpp"
#include "protocol/delta/patch.hpp"
#include "protocol/delta/signature.hpp"
#include "protocol/python_sources.hpp"

namespace ferry::sync {
using namespace engine_parts;

namespace {

constexpr std::size_t kIoBlock = 1u << 20;
// sync/read requests in flight for one whole-file pull: enough to hide a round trip, few enough
// that a 10 GiB checkpoint needs tens of MiB, not 10 GiB.
constexpr unsigned kChunksInFlight = 4;
// A delta larger than this is not worth it (nor one reply): the file comes whole instead.
constexpr std::uint64_t kMaxPullDelta = 128u << 20;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

std::int64_t mtime_of(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec;
}

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd >= 0) ::close(fd);
      fd = std::exchange(o.fd, -1);
    }
    return *this;
  }
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

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
std::expected<Fd, std::string> open_dir_chain(const fs::path& root, const std::string& rel, bool create) {
  Fd cur(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (cur.fd < 0) return std::unexpected(errno_text(("open " + root.string()).c_str()));
  std::size_t start = 0;
  while (start < rel.size()) {
    std::size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    const std::string comp = rel.substr(start, end - start);
    start = end + 1;
    if (comp.empty() || comp == ".") continue;
    if (comp == "..") return std::unexpected("'..' in a path");
    int next = ::openat(cur.fd, comp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT) {
      if (!create) return std::unexpected(std::string("missing"));
      if (::mkdirat(cur.fd, comp.c_str(), 0755) != 0 && errno != EEXIST) return std::unexpected(errno_text(("mkdir " + comp).c_str()));
      next = ::openat(cur.fd, comp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (next < 0) {
      if (errno == ELOOP || errno == ENOTDIR)
        return std::unexpected(fmt::format("'{}' is a symlink or a file locally; pull never writes through it", rel.substr(0, end)));
      return std::unexpected(fmt::format("open {}: {}", rel.substr(0, end), std::strerror(errno)));
    }
    cur = Fd(next);
  }
  return cur;
}

// pread until `n` bytes or the end; the count read.
std::expected<std::size_t, std::string> pread_full(int fd, std::uint8_t* buf, std::size_t n, std::uint64_t offset) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t k = ::pread(fd, buf + got, n - got, static_cast<off_t>(offset + got));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return std::unexpected(errno_text("read"));
    if (k == 0) break;
    got += static_cast<std::size_t>(k);
  }
  return got;
}

std::expected<void, std::string> pwrite_full(int fd, const std::uint8_t* buf, std::size_t n, std::uint64_t offset) {
  for (std::size_t done = 0; done < n;) {
    const ssize_t k = ::pwrite(fd, buf + done, n - done, static_cast<off_t>(offset + done));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return std::unexpected(errno_text("write"));
    done += static_cast<std::size_t>(k);
  }
  return {};
}

// The xxh3-128 of bytes [0, size) of `fd`, read in blocks (never the whole file in memory).
std::expected<Hash128, std::string> hash_fd(int fd, std::uint64_t size) {
  delta::Hash128Stream h;
  std::vector<std::uint8_t> buf(std::min<std::uint64_t>(size, kIoBlock));
  for (std::uint64_t at = 0; at < size;) {
    auto got = pread_full(fd, buf.data(), std::min<std::uint64_t>(buf.size(), size - at), at);
    if (!got) return std::unexpected(got.error());
    if (*got == 0) return std::unexpected(std::string("shrank while being hashed"));
    h.update(delta::Bytes(buf.data(), *got));
    at += *got;
  }
  return h.digest();
}

// Signs bytes [offset, offset + length) of the local file, reading it in blocks.
std::expected<std::vector<std::uint8_t>, std::string> sign_range(int fd, std::uint64_t file_size, delta::SignatureParams params,
                                                                 std::uint64_t offset, std::uint64_t length) {
  std::vector<std::uint8_t> out;
  auto b = delta::SignatureBuilder::create(params, offset, length, file_size, out);
  if (!b) return std::unexpected("signature: " + b.error().message);
  std::vector<std::uint8_t> buf(std::min<std::uint64_t>(std::max<std::uint64_t>(length, 1), kIoBlock));
  for (std::uint64_t at = 0; at < length;) {
    auto got = pread_full(fd, buf.data(), std::min<std::uint64_t>(buf.size(), length - at), offset + at);
    if (!got) return std::unexpected(got.error());
    if (*got == 0) return std::unexpected(std::string("the local file shrank while being signed"));
    if (auto ok = b->update(delta::Bytes(buf.data(), *got)); !ok) return std::unexpected("signature: " + ok.error().message);
    at += *got;
  }
  if (auto ok = b->finish(); !ok) return std::unexpected("signature: " + ok.error().message);
  return out;
}

// A temp file beside the target, removed unless renamed into place.
struct TempFile {
  int dir_fd = -1;
  std::string name;
  Fd fd;
  bool kept = false;
  ~TempFile() {
    if (!name.empty() && !kept) ::unlinkat(dir_fd, name.c_str(), 0);
  }
};

std::expected<void, std::string> make_temp(TempFile& t, int dir_fd, const std::string& target_name) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  t.dir_fd = dir_fd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string name = fmt::format(".ferry-tmp.{}.{:08x}", target_name.substr(0, 200), static_cast<std::uint32_t>(rng()));
    int fd = ::openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      t.name = std::move(name);
      t.fd = Fd(fd);
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
Fetched from_agent_error(const char* method, const protocol::ResponseError& e, std::uint64_t wire) {
  const std::string code = e.data ? e.data->value("code", "") : "";
  if (code == "not_found" || e.message.find("changed while being read") != std::string::npos)
    return failed(Fetched::Status::unstable, e.message, wire);
  return failed(Fetched::Status::error, std::string(method) + ": " + e.message, wire);
}

std::optional<Hash128> hash_of(const json& reply) {
  auto it = reply.find("hash");
  if (it == reply.end() || !it->is_binary() || it->get_binary().size() != 16) return std::nullopt;
  Hash128 h{};
  std::memcpy(h.data(), it->get_binary().data(), 16);
  return h;
}

// Writes `delta` (the agent's, hostile until checked) applied to `base_fd` into `out_fd`:
// COPYs read the base with pread (so the base never sits in memory whole), bounds and the
// declared size are checked op by op, and the output must hash to the declared value.
std::expected<delta::DeltaStats, std::string> patch_to_fd(const std::vector<std::uint8_t>& d, int base_fd, std::uint64_t base_size,
                                                          int out_fd, const delta::DeltaHeader& expect) {
  auto reader = delta::DeltaReader::open(d);
  if (!reader) return std::unexpected("delta: " + reader.error().message);
  const auto& h = reader->header();
  if (h.base_size != base_size) return std::unexpected(std::string("delta: made against another base size"));
  if (h.output_size != expect.output_size || h.output_hash != expect.output_hash)
    return std::unexpected(std::string("delta: its header disagrees with the file the agent described"));
  delta::DeltaStats stats;
  delta::Hash128Stream hash;
  std::uint64_t out_at = 0;
  std::vector<std::uint8_t> buf;
  for (;;) {
    auto op = reader->next();
    if (!op) return std::unexpected("delta: " + op.error().message);
    if (!*op) break;
    const delta::DeltaOp& o = **op;
    if (o.length > h.output_size - out_at) return std::unexpected(std::string("delta: output beyond the declared size"));
    if (o.kind == delta::DeltaOp::Kind::literal) {
      if (auto w = pwrite_full(out_fd, o.data.data(), o.data.size(), out_at); !w) return std::unexpected(w.error());
      hash.update(delta::Bytes(o.data.data(), o.data.size()));
      out_at += o.data.size();
      stats.literal_bytes += o.data.size();
      ++stats.literal_ops;
      continue;
    }
    if (o.offset > base_size || o.length > base_size - o.offset) return std::unexpected(std::string("delta: a copy outside the base"));
    buf.resize(std::min<std::uint64_t>(o.length, kIoBlock));
    for (std::uint64_t done = 0; done < o.length;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), o.length - done));
      auto got = pread_full(base_fd, buf.data(), n, o.offset + done);
      if (!got) return std::unexpected(got.error());
      if (*got != n) return std::unexpected(std::string("the local file shrank during the pull"));
      if (auto w = pwrite_full(out_fd, buf.data(), n, out_at); !w) return std::unexpected(w.error());
      hash.update(delta::Bytes(buf.data(), n));
      out_at += n;
      done += n;
    }
    stats.copied_bytes += o.length;
    ++stats.copy_ops;
  }
  if (out_at != h.output_size) return std::unexpected(std::string("delta: output shorter than declared"));
  if (hash.digest() != h.output_hash) return std::unexpected(std::string("delta: the result does not hash to the declared value"));
  return stats;
}

// A mirror's deletes: files an earlier pull wrote (the manifest) under `paths` that the remote
// no longer offers go, each only while it is still what ferry wrote (hash as recorded).
void mirror_deletes(const fs::path& local_root, const TreeState& remote, const std::vector<std::string>& paths, Manifest& manifest,
                    SyncSummary& summary, bool dry_run) {
  std::vector<std::string> gone;
  for (const auto& [path, m] : manifest.entries)
    if (!remote.contains(path) && std::any_of(paths.begin(), paths.end(), [&](const std::string& p) { return under(path, p); }))
      gone.push_back(path);
  for (const auto& path : gone) {
    const FileMeta recorded = manifest.entries.at(path);
    auto dir = open_dir_chain(local_root, dir_of(path), false);
    struct stat st {};
    if (!dir || ::fstatat(dir->fd, name_of(path).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (!dry_run) manifest.forget(path);  // already gone locally
      continue;
    }
    std::optional<Hash128> local;
    if (S_ISREG(st.st_mode)) {
      Fd fd(::openat(dir->fd, name_of(path).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      if (fd.fd >= 0)
        if (auto h = hash_fd(fd.fd, static_cast<std::uint64_t>(st.st_size))) local = *h;
    }
    if (!local || !recorded.hash || *local != *recorded.hash) {
      summary.conflicts.push_back({path, ConflictKind::changed_remotely, "changed locally since ferry mirrored it; left as it is"});
      continue;
    }
    ++summary.files_deleted;
    if (dry_run) continue;
    if (::unlinkat(dir->fd, name_of(path).c_str(), 0) != 0 && errno != ENOENT) {
      summary.errors.push_back(errno_text(("delete " + path).c_str()));
      continue;
    }
    manifest.forget(path);
  }
}

}  // namespace

std::expected<SyncSummary, std::string> SyncEngine::pull(const std::vector<std::string>& paths_in, const SyncOptions& o) {
  auto lock = ProjectLock::acquire(target_.local_root, o.waiting, o.cancelled);
  if (!lock) return std::unexpected(lock.error());
  const auto t0 = Clock::now();
  SyncSummary summary;
  summary.dry_run = o.dry_run;
  const fs::path& root = target_.local_root;
  const std::string& base = target_.remote_base;
  std::vector<std::string> paths;
  for (auto p : paths_in) {
    while (p.starts_with("./")) p.erase(0, 2);
    while (p.size() > 1 && p.ends_with('/')) p.pop_back();
    if (p.starts_with('/') || p == ".." || p.starts_with("../") || p.find("/../") != std::string::npos || p.ends_with("/.."))
      return std::unexpected("pull: '" + p + "' must be a path inside the mapping");
    paths.push_back(p == "." ? "" : p);
  }
  if (paths.empty()) paths.push_back("");

  std::lock_guard state_lock(state_->mu);
  if (!state_->manifest) {
    auto loaded = load_manifest(manifest_path());
    if (!loaded) return std::unexpected(loaded.error());
    state_->manifest = std::move(*loaded);
  }
  Manifest* manifest = &*state_->manifest;
  manifest->remote_root = target_.remote_root;
  // The hash index push keeps: a local copy unchanged since it was last hashed is not read again
  // (a 1 GiB checkpoint costs a stat, not a second read), and what pull writes is stored in it.
  if (!state_->index) {
    auto index = FileIndex::load(default_index_path(root));
    if (!index) spdlog::warn("sync: index unreadable ({}); rehashing", index.error());
    state_->index.emplace(index ? std::move(*index) : FileIndex{});
  }
  FileIndex& index = *state_->index;
  auto key_of = [](const struct stat& st) {
    return IndexKey{static_cast<std::uint64_t>(st.st_size), mtime_of(st), static_cast<std::uint32_t>(st.st_mode & 07777),
                    static_cast<std::uint64_t>(st.st_ino)};
  };
  std::atomic<bool> index_changed{false};
  // Where every request reads: the mapping (base) or a read-only source outside it.
  const bool from_source = !target_.remote_source.empty();
  auto where = [&](json extra) {
    if (from_source) extra["source"] = target_.remote_source;
    else extra["base"] = base;
    return extra;
  };
  json known = json::array();
  for (const auto& [p, m] : manifest->entries) known.push_back(p);
  auto listed = list_remote_paged(endpoint_, where(json{{"known", std::move(known)}, {"hashUnder", paths}}), o);
  if (!listed) return std::unexpected(listed.error());
  if (listed->cancelled) {
    summary.cancelled = true;
    summary.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return summary;
  }
  TreeState remote = std::move(listed->entries);
  // A read-only source serves Python sources only; anything else in its reply is not trusted.
  if (from_source) std::erase_if(remote, [](const auto& e) { return e.second.kind != EntryKind::file || !protocol::is_python_source_file(e.first); });
  if (o.pull_leave_out) {
    std::vector<std::pair<std::string, std::uint64_t>> offered;
    for (const auto& [path, R] : remote)
      if (R.kind == EntryKind::file) offered.emplace_back(path, R.size);
    for (const auto& gone : o.pull_leave_out(offered)) remote.erase(gone);
  }
  const std::uint64_t delta_min_size = PlanOptions{}.delta_min_size;
  const std::uint64_t delta_max_size = PlanOptions{}.delta_max_size;  // the agent builds a delta in memory

  Progress prog;
  prog.manifest = manifest;
  prog.summary = &summary;
  prog.options = &o;
  // What a file job needs; `local_*` is the target as planned against, re-checked at the rename.
  struct PullFile {
    std::string path;
    FileMeta remote;
    bool local_exists = false;
    std::uint64_t local_size = 0;
    std::int64_t local_mtime_ns = 0;
    bool delta = false;
  };
  std::vector<PullFile> files;
  std::size_t matched_any = 0;
  for (const auto& [path, R] : remote) {
    if (std::none_of(paths.begin(), paths.end(), [&](const std::string& p) { return under(path, p); })) continue;
    // Ignore rules do not apply (asking for outputs/ means wanting what is there, ignored or
    // not), but ferry's own state never comes back.
    if (path == ".ferry" || path.starts_with(".ferry/")) continue;
    ++matched_any;
    const std::string name = name_of(path);
    auto parent = open_dir_chain(root, dir_of(path), false);
    if (!parent && parent.error() != "missing") {
      summary.errors.push_back("pull '" + path + "': " + parent.error());
      continue;
    }
    struct stat st {};
    const bool exists = parent && ::fstatat(parent->fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (R.kind == EntryKind::dir) {
      if (exists && !S_ISDIR(st.st_mode)) {
        summary.conflicts.push_back({path, ConflictKind::kind_mismatch, "a local file where the remote has a directory"});
      } else if (!exists && !o.dry_run) {
        auto made = open_dir_chain(root, path, true);
        if (!made) summary.errors.push_back("mkdir '" + path + "': " + made.error());
        else ::fchmod(made->fd, R.mode & 07777);
        ++summary.dirs_made;
      }
      continue;
    }
    if (R.kind == EntryKind::symlink) {
      // Made as a link, never followed: its target may well point outside the root.
      if (exists && S_ISLNK(st.st_mode)) {
        std::string cur(static_cast<std::size_t>(st.st_size) + 1, '\0');
        const ssize_t n = ::readlinkat(parent->fd, name.c_str(), cur.data(), cur.size());
        if (n >= 0 && static_cast<std::string::size_type>(n) == R.link_target.size() && cur.compare(0, n, R.link_target) == 0) continue;
      }
      if (exists && !S_ISLNK(st.st_mode) && !o.force) {
        summary.conflicts.push_back({path, ConflictKind::kind_mismatch, "a local file where the remote has a symlink"});
        continue;
      }
      ++summary.files_sent;
      if (o.dry_run) continue;
      auto dir = open_dir_chain(root, dir_of(path), true);
      if (!dir) {
        summary.errors.push_back("symlink '" + path + "': " + dir.error());
        continue;
      }
      const std::string tmp = ".ferry-tmp." + name;
      ::unlinkat(dir->fd, tmp.c_str(), 0);
      if (::symlinkat(R.link_target.c_str(), dir->fd, tmp.c_str()) != 0 || ::renameat(dir->fd, tmp.c_str(), dir->fd, name.c_str()) != 0) {
        summary.errors.push_back("symlink '" + path + "': " + std::strerror(errno));
        ::unlinkat(dir->fd, tmp.c_str(), 0);
      } else {
        manifest->record(path, R);
      }
      continue;
    }
    // A file: compare with the local one by content.
    if (exists && S_ISDIR(st.st_mode)) {
      summary.conflicts.push_back({path, ConflictKind::kind_mismatch, "a local directory where the remote has a file"});
      continue;
    }
    std::optional<Hash128> local_hash;
    if (exists && S_ISREG(st.st_mode)) {
      local_hash = index.lookup(path, key_of(st));
      Fd fd(local_hash ? -1 : ::openat(parent->fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      struct stat after {};
      const std::int64_t hashed_at = now_ns();
      if (fd.fd >= 0)
        if (auto h = hash_fd(fd.fd, static_cast<std::uint64_t>(st.st_size))) {
          local_hash = *h;
          // Stored only when the file did not move while read (the index is trusted later).
          if (::fstat(fd.fd, &after) == 0 && key_of(after) == key_of(st)) {
            index.store(path, key_of(st), *h, hashed_at);
            index_changed = true;
          }
        }
    }
    if (local_hash && R.hash && *local_hash == *R.hash) {
      ++summary.unchanged;
      if (!o.dry_run) manifest->record(path, R);
      continue;
    }
    if (exists && !o.force) {
      auto m = manifest->entries.find(path);
      if (m == manifest->entries.end() || !m->second.hash || !local_hash || *m->second.hash != *local_hash) {
        summary.conflicts.push_back({path, ConflictKind::changed_remotely,
                                     "the local file differs from what ferry last synced (pull --force takes the remote's)"});
        continue;
      }
    }
    prog.total += R.size;
    if (o.dry_run) {
      ++summary.files_sent;
      summary.bytes_literal += R.size;
      continue;
    }
    PullFile f{path, R, exists, exists ? static_cast<std::uint64_t>(st.st_size) : 0, exists ? mtime_of(st) : 0, false};
    f.delta = exists && S_ISREG(st.st_mode) && f.local_size >= delta_min_size && R.size >= delta_min_size &&
              f.local_size <= delta_max_size && R.size <= delta_max_size;
    files.push_back(std::move(f));
  }
  for (const auto& p : paths)
    if (!p.empty() && !remote.contains(p) && matched_any == 0)
      summary.errors.push_back("'" + p + "' is not under " + target_.remote_root + " on " + endpoint_.description() +
                               " (pull paths are relative to the mapping root; `ferry pull .` brings back all of it)");
  if (o.pull_mirror) mirror_deletes(root, remote, paths, *manifest, summary, o.dry_run);
  if (o.before_transfer && !o.dry_run) o.before_transfer();

  auto cancelled = [&] { return o.cancelled && o.cancelled(); };

  // The delta path: the local copy's signature (two levels above kTwoLevelAbove, as push), the
  // agent's delta back, patched from the local file into `tmp`.
  auto fetch_delta = [&](const PullFile& f, int dir_fd, int tmp_fd) -> Fetched {
    const std::string name = name_of(f.path);
    Fd base_fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (base_fd.fd < 0) return failed(Fetched::Status::fallback, errno_text("open the local copy"));
    const bool two_level = f.local_size >= kTwoLevelAbove;
    const delta::SignatureParams params =
        two_level ? delta::SignatureParams{kCoarseBlock, 8} : delta::default_params(f.local_size);
    auto sig = sign_range(base_fd.fd, f.local_size, params, 0, f.local_size);
    if (!sig) return failed(Fetched::Status::fallback, sig.error());
    std::uint64_t wire = sig->size();
    json req = where(json{{"path", f.path}, {"signature", as_binary(*sig)}, {"maxDelta", kMaxPullDelta}});
    if (two_level) req["rangesOnly"] = true;
    auto reply = endpoint_.call("sync/readDelta", req, kBigCallTimeout);
    if (!reply) {
      if (reply.error().code == protocol::error_code::kMethodNotFound) return failed(Fetched::Status::fallback, "an agent without sync/readDelta");
      return from_agent_error("sync/readDelta", reply.error(), wire);
    }
    if (reply->contains("ranges")) {
      json fine = json::array();
      for (const auto& rg : reply->at("ranges")) {
        if (!rg.is_array() || rg.size() != 2 || !rg[0].is_number_unsigned() || !rg[1].is_number_unsigned())
          return failed(Fetched::Status::error, "sync/readDelta: malformed ranges", wire);
        const std::uint64_t off = rg[0].get<std::uint64_t>(), len = rg[1].get<std::uint64_t>();
        if (off > f.local_size || len > f.local_size - off || len == 0)
          return failed(Fetched::Status::error, "sync/readDelta: a range outside the local file", wire);
        auto fsig = sign_range(base_fd.fd, f.local_size, delta::SignatureParams{kFineBlock, 8}, off, len);
        if (!fsig) return failed(Fetched::Status::fallback, fsig.error(), wire);
        wire += fsig->size();
        fine.push_back(as_binary(std::move(*fsig)));
      }
      wire += sig->size();  // the coarse signature goes again: the agent keeps no state between requests
      req.erase("rangesOnly");
      req["fine"] = std::move(fine);
      reply = endpoint_.call("sync/readDelta", req, kBigCallTimeout);
      if (!reply) return from_agent_error("sync/readDelta", reply.error(), wire);
    }
    if (reply->value("tooBig", false)) return failed(Fetched::Status::fallback, "delta larger than the file is worth", wire);
    if (!reply->contains("delta") || !reply->at("delta").is_binary())
      return failed(Fetched::Status::error, "sync/readDelta: no delta in the reply", wire);
    const auto& packed = reply->at("delta").get_binary();
    wire += packed.size();
    Fetched out;
    out.wire = wire;
    out.got = f.remote;
    out.got.size = reply->value("size", std::uint64_t{0});
    out.got.mtime_ns = reply->value("mtimeNs", std::int64_t{0});
    out.got.mode = reply->value("mode", f.remote.mode) & 07777;
    out.got.hash = hash_of(*reply);
    if (!out.got.hash) return failed(Fetched::Status::error, "sync/readDelta: no hash in the reply", wire);
    auto d = zstd_decompress(packed.data(), packed.size(), reply->value("deltaSize", std::uint64_t{0}));
    if (!d) return failed(Fetched::Status::error, "sync/readDelta: " + d.error(), wire);
    delta::DeltaHeader expect{f.local_size, out.got.size, *out.got.hash};
    auto stats = patch_to_fd(*d, base_fd.fd, f.local_size, tmp_fd, expect);
    if (!stats) return failed(Fetched::Status::error, stats.error(), wire);
    out.literal = stats->literal_bytes;
    out.matched = stats->copied_bytes;
    return out;
  };

  // The whole-file path: several sync/read chunks in flight, each written where it belongs
  // with pwrite, so memory stays at kChunksInFlight chunks whatever the file size.
  auto fetch_whole = [&](const PullFile& f, int tmp_fd) -> Fetched {
    const std::uint64_t size = f.remote.size;
    const std::uint64_t chunks = std::max<std::uint64_t>(1, (size + kReadChunk - 1) / kReadChunk);
    std::atomic<std::uint64_t> next{0}, wire{0};
    std::mutex mu;
    std::optional<Fetched> failure;
    std::optional<std::uint32_t> mode;
    auto fail = [&](Fetched f) {
      std::lock_guard lock(mu);
      if (!failure) failure = std::move(f);
    };
    auto worker = [&] {
      for (std::uint64_t i; (i = next.fetch_add(1)) < chunks;) {
        {
          std::lock_guard lock(mu);
          if (failure) return;
        }
        if (cancelled()) return fail(failed(Fetched::Status::cancelled, "cancelled"));
        const std::uint64_t offset = i * kReadChunk;
        auto chunk = endpoint_.call("sync/read", where(json{{"path", f.path}, {"offset", offset}, {"length", kReadChunk}}),
                                    kBigCallTimeout);
        if (!chunk) return fail(from_agent_error("sync/read", chunk.error(), 0));
        const auto& data = chunk->at("data").get_binary();
        wire += data.size();
        // Every chunk must come from the file the listing saw: else the parts could be of
        // different versions, and the next pull settles it.
        if (chunk->value("size", std::uint64_t{0}) != size || chunk->value("mtimeNs", std::int64_t{0}) != f.remote.mtime_ns)
          return fail(failed(Fetched::Status::unstable, "changed on the remote since it was listed"));
        const std::uint64_t want = std::min<std::uint64_t>(kReadChunk, size - std::min(size, offset));
        const std::uint64_t raw_size = chunk->value("rawSize", std::uint64_t{0});
        if (raw_size != want) return fail(failed(Fetched::Status::error, fmt::format("sync/read: {} bytes at {}, {} expected", raw_size, offset, want)));
        auto raw = zstd_decompress(data.data(), data.size(), raw_size);
        if (!raw) return fail(failed(Fetched::Status::error, "sync/read: " + raw.error()));
        if (auto w = pwrite_full(tmp_fd, raw->data(), raw->size(), offset); !w) return fail(failed(Fetched::Status::error, w.error()));
        {
          std::lock_guard lock(mu);
          mode = chunk->value("mode", f.remote.mode);
        }
        prog.advance(raw->size());
      }
    };
    {
      std::vector<std::jthread> pool;
      const auto width = static_cast<unsigned>(std::min<std::uint64_t>(kChunksInFlight, chunks));
      for (unsigned t = 1; t < width; ++t) pool.emplace_back(worker);
      worker();
    }
    if (failure) {
      failure->wire = wire.load();
      return *failure;
    }
    auto h = hash_fd(tmp_fd, size);
    if (!h) return failed(Fetched::Status::error, h.error(), wire.load());
    if (f.remote.hash && *h != *f.remote.hash)
      return failed(Fetched::Status::unstable, "changed on the remote while being read", wire.load());
    Fetched out;
    out.wire = wire.load();
    out.got = f.remote;
    out.got.hash = *h;
    out.got.mode = mode.value_or(f.remote.mode) & 07777;
    out.literal = size;
    return out;
  };

  std::vector<std::function<void()>> jobs;
  for (const PullFile& pf : files) {
    jobs.push_back([&, fp = &pf] {
      const PullFile& f = *fp;
      const std::string name = name_of(f.path);
      auto dir = open_dir_chain(root, dir_of(f.path), true);
      if (!dir) return prog.error(fmt::format("pull '{}': {}", f.path, dir.error()));
      TempFile tmp;
      if (auto made = make_temp(tmp, dir->fd, name); !made) return prog.error(fmt::format("pull '{}': {}", f.path, made.error()));
      Fetched r = f.delta ? fetch_delta(f, dir->fd, tmp.fd.fd) : failed(Fetched::Status::fallback, "");
      if (r.status == Fetched::Status::fallback) {
        if (f.delta) spdlog::debug("pull '{}': whole file ({})", f.path, r.message);
        const std::uint64_t spent = r.wire;
        if (::ftruncate(tmp.fd.fd, 0) != 0) return prog.error(fmt::format("pull '{}': {}", f.path, errno_text("truncate")));
        r = fetch_whole(f, tmp.fd.fd);
        r.wire += spent;
      } else if (r.status == Fetched::Status::ok) {
        prog.advance(f.remote.size);
      }
      {
        std::lock_guard lock(prog.mu);
        summary.bytes_on_wire += r.wire;
      }
      // The local target must still be what was planned against: a user edit during the pull
      // is a conflict and keeps the user's bytes (the temp file goes).
      struct stat now {};
      const bool now_exists = ::fstatat(dir->fd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0;
      const bool local_changed = now_exists != f.local_exists ||
                                 (now_exists && (static_cast<std::uint64_t>(now.st_size) != f.local_size || mtime_of(now) != f.local_mtime_ns));
      if (local_changed) {
        std::lock_guard lock(prog.mu);
        summary.conflicts.push_back({f.path, ConflictKind::changed_remotely, "the local file changed during the pull; it was left as it is"});
        return;
      }
      if (r.status == Fetched::Status::cancelled) return;  // the summary says cancelled; the next pull resumes
      if (r.status == Fetched::Status::unstable) {
        std::lock_guard lock(prog.mu);
        summary.unstable.push_back(f.path);
        return;
      }
      if (r.status != Fetched::Status::ok) return prog.error(fmt::format("pull '{}': {}", f.path, r.message));
      const timespec times[2] = {{0, UTIME_OMIT},
                                 {static_cast<time_t>(r.got.mtime_ns / 1'000'000'000), static_cast<long>(r.got.mtime_ns % 1'000'000'000)}};
      if (::fchmod(tmp.fd.fd, r.got.mode) != 0 || ::futimens(tmp.fd.fd, times) != 0 || ::fsync(tmp.fd.fd) != 0)
        return prog.error(fmt::format("pull '{}': {}", f.path, errno_text("set attributes")));
      if (::renameat(dir->fd, tmp.name.c_str(), dir->fd, name.c_str()) != 0)
        return prog.error(fmt::format("pull '{}': {}", f.path, errno_text("rename")));
      tmp.kept = true;
      ::fsync(dir->fd);  // best effort, as write_file_atomically
      if (struct stat done {}; ::fstat(tmp.fd.fd, &done) == 0) {
        index.store(f.path, key_of(done), *r.got.hash, now_ns());
        index_changed = true;
      }
      std::lock_guard lock(prog.mu);
      manifest->record(f.path, r.got);
      ++summary.files_sent;  // counted once received: a conflict or a failure is not a file pulled
      summary.bytes_literal += r.literal;
      summary.bytes_matched += r.matched;
    });
  }
  run_parallel(jobs, o.in_flight, o.cancelled);
  if (index_changed) state_->index_dirty = true;
  summary.cancelled = cancelled();
  if (!o.dry_run) {
    ++state_->manifest_version;
    {
      std::lock_guard lock(state_->persist_mu);
      state_->pending = true;
    }
    state_->persist_cv.notify_all();
  }
  summary.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return summary;
}

}  // namespace ferry::sync

// Atomic, verified sync writes under the agent root; see file_writer.hpp.
#include "remote-runtime/agent/sync/file_writer.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>


#include "common/copy_range.hpp"
#include "common/full_io.hpp"
#include "common/posix/stat_times.hpp"
#include "protocol/delta/parallel_signature.hpp"
#include "common/temp_name.hpp"
#include "common/unique_fd.hpp"
#include "remote-runtime/agent/root_path.hpp"
#include "remote-runtime/agent/sync/file_writer_parent.hpp"

namespace ferry::agent::sync {
namespace {

using Fd = ferry::posix::UniqueFd;
using ferry::posix::mtime_of;
using ferry::posix::to_timespec;

std::unexpected<WriteError> fail(WriteErrc code, std::string message) {
  return std::unexpected(WriteError{code, std::move(message)});
}

std::unexpected<WriteError> sys_fail(const std::string& what) {
  const int e = errno;
  const WriteErrc code = e == ENOENT ? WriteErrc::not_found : e == ENOSPC || e == EDQUOT ? WriteErrc::no_space : WriteErrc::io;
  return fail(code, what + ": " + std::strerror(e));
}

std::expected<void, WriteError> check_precondition(int dirfd, const std::string& name, const Precondition& expect,
                                                   const std::string& rel) {
  struct stat st {};
  const bool exists = ::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (!exists && errno != ENOENT) return sys_fail("stat " + rel);
  if (exists != expect.exists ||
      (exists && (static_cast<std::uint64_t>(st.st_size) != expect.size || mtime_of(st) != expect.mtime_ns))) {
    return fail(WriteErrc::conflict, rel + " changed on the remote since the sync was planned");
  }
  return {};
}

// Opens directory `dir_rel` under `from`, walking its components from offset `pos` one at a
// time with O_NOFOLLOW (missing ones made if `create`): no symlink on the way is followed.
// Nothing to walk: a duplicate of `from`. `rel` is the whole path, for messages.
std::expected<Fd, WriteError> walk_dirs(int from, const std::string& dir_rel, std::size_t pos, const std::string& rel,
                                        bool create) {
  Fd dir;
  while (pos <= dir_rel.size() && !dir_rel.empty()) {
    const std::size_t slash = std::min(dir_rel.find('/', pos), dir_rel.size());
    const std::string part = dir_rel.substr(pos, slash - pos);
    const int at = dir ? dir.get() : from;
    int fd = ::openat(at, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(at, part.c_str(), 0755) != 0 && errno != EEXIST) {
        return sys_fail("mkdir " + rel.substr(0, slash));
      }
      fd = ::openat(at, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      if (errno == ELOOP || errno == ENOTDIR) {
        std::string msg = rel.substr(0, slash);
        msg.append(" (in ").append(rel).append(") is a symlink or not a directory");
        return fail(WriteErrc::invalid_path, std::move(msg));
      }
      return sys_fail("open " + rel.substr(0, slash));
    }
    dir = Fd(fd);
    pos = slash + 1;
  }
  if (!dir) dir = Fd(::dup(from));
  if (!dir) return sys_fail("dup directory of " + rel);
  return dir;
}

}  // namespace

struct FileWriter::DirCache {
  std::mutex mu;
  std::unordered_map<std::string, DirRef> dirs;  // by normalised relative path, "" = the root
};

struct PendingFile::State {
  DirRef dir;
  std::string name, tmp, rel;
  Fd fd;
  FileAttrs attrs;
  ferry::delta::Hash128Stream hash;
  // Bytes received, as disjoint [start, end) ranges with touching ones merged; `hashed` is the
  // prefix already fed to the hash (it only grows in file order).
  std::map<std::uint64_t, std::uint64_t> ranges;
  std::uint64_t received = 0, append_at = 0, hashed = 0;
  bool half_reported = false;
  // Set by apply_delta, which hashes the output beside the writes: the digest is handed in
  // before commit (outside_digest) instead of being computed here.
  bool outside_hash = false;
  std::optional<Hash128> outside_digest;
  FileWriter::StepHook hook;

  ~State() {
    if (fd) {
      fd.reset();
      ::unlinkat(dir.get(), tmp.c_str(), 0);
    }
  }
  void step(WriteStep s) const {
    if (hook) hook(s);
  }
};

PendingFile::PendingFile() = default;
PendingFile::PendingFile(PendingFile&&) noexcept = default;
PendingFile& PendingFile::operator=(PendingFile&&) noexcept = default;
PendingFile::~PendingFile() = default;

void PendingFile::abort() { state_.reset(); }

std::uint64_t PendingFile::received() const { return state_ ? state_->received : 0; }

int PendingFile::dir_fd() const { return state_ ? state_->dir.get() : -1; }

int PendingFile::temp_fd() const { return state_ ? state_->fd.get() : -1; }

bool PendingFile::temp_still_named() const {
  struct stat by_fd {}, by_name {};
  return state_ && ::fstat(state_->fd.get(), &by_fd) == 0 &&
         ::fstatat(state_->dir.get(), state_->tmp.c_str(), &by_name, AT_SYMLINK_NOFOLLOW) == 0 && by_fd.st_dev == by_name.st_dev &&
         by_fd.st_ino == by_name.st_ino;
}

void PendingFile::retarget(const FileAttrs& attrs) {
  if (state_) state_->attrs = attrs;
}

std::expected<void, WriteError> PendingFile::write(Bytes bytes) {
  if (!state_) return fail(WriteErrc::io, "write after commit or abort");
  return write_at(state_->append_at, bytes);
}

std::expected<void, WriteError> PendingFile::write_at(std::uint64_t offset, Bytes bytes) {
  return record(offset, bytes.size(), bytes.data(), bytes.data());
}

std::expected<void, WriteError> PendingFile::mark_placed(std::uint64_t offset, std::uint64_t length) {
  return record(offset, length, nullptr, nullptr);
}

void PendingFile::hash_outside() {
  if (state_) state_->outside_hash = true;
}

void PendingFile::set_outside_digest(const Hash128& digest) {
  if (state_) state_->outside_digest = digest;
}

std::expected<void, WriteError> PendingFile::copy_from(int base_fd, std::uint64_t base_offset, std::uint64_t offset, std::uint64_t n,
                                                       ferry::posix::RangeCopier& copier) {
  if (!state_) return fail(WriteErrc::io, "write after commit or abort");
  State& s = *state_;
  // Bounds and overlap first (as record checks them), so nothing lands outside the file.
  if (offset > s.attrs.size || n > s.attrs.size - offset)
    return fail(WriteErrc::bad_delta, s.rel + ": a copy reaches past the announced " + std::to_string(s.attrs.size) + " bytes");
  auto next = s.ranges.upper_bound(offset);
  auto prev = next == s.ranges.begin() ? s.ranges.end() : std::prev(next);
  if ((prev != s.ranges.end() && prev->second > offset) || (next != s.ranges.end() && next->first < offset + n))
    return fail(WriteErrc::bad_delta, s.rel + ": a copy overlaps bytes already written");
  const ssize_t got = copier.copy(base_fd, base_offset, s.fd.get(), offset, static_cast<std::size_t>(n));
  if (got < 0) return sys_fail("copy into " + s.rel);
  if (static_cast<std::uint64_t>(got) != n) return fail(WriteErrc::io, s.rel + ": the old file shrank while the delta was applied");
  return record(offset, n, nullptr, nullptr);
}

std::string PendingFile::temp_name() const { return state_ ? state_->tmp : std::string(); }

std::expected<void, WriteError> PendingFile::record(std::uint64_t offset, std::uint64_t n, const std::uint8_t* bytes,
                                                    const std::uint8_t* hash_from) {
  if (!state_) return fail(WriteErrc::io, "write after commit or abort");
  State& s = *state_;
  if (offset > s.attrs.size || n > s.attrs.size - offset) {
    return fail(WriteErrc::hash_mismatch, s.rel + ": bytes at " + std::to_string(offset) + "+" + std::to_string(n) +
                                              " reach past the announced " + std::to_string(s.attrs.size));
  }
  if (n == 0) return {};
  const std::uint64_t end = offset + n;
  // The first range starting after `offset`, and the one before it: neither may overlap.
  auto next = s.ranges.upper_bound(offset);
  auto prev = next == s.ranges.begin() ? s.ranges.end() : std::prev(next);
  if ((prev != s.ranges.end() && prev->second > offset) || (next != s.ranges.end() && next->first < end)) {
    return fail(WriteErrc::hash_mismatch, s.rel + ": bytes at " + std::to_string(offset) + "+" + std::to_string(n) +
                                              " overlap bytes already received");
  }
  if (bytes && ferry::posix::pwrite_full(s.fd.get(), bytes, static_cast<std::size_t>(n), offset) < 0) return sys_fail("write " + s.rel);
  // Record the range, merged with touching neighbours.
  std::uint64_t start = offset, stop = end;
  if (prev != s.ranges.end() && prev->second == offset) {
    start = prev->first;
    s.ranges.erase(prev);
  }
  if (next != s.ranges.end() && next->first == end) {
    stop = next->second;
    s.ranges.erase(next);
  }
  s.ranges.emplace(start, stop);
  s.received += n;
  s.append_at = std::max(s.append_at, end);
  // Hash what is now contiguous from the hashed prefix: these bytes from memory, any that
  // arrived earlier (or were placed by a sibling) and now join the prefix read back from the file.
  if (s.outside_hash) {
    // apply_delta hashes the output on a thread of its own; nothing to do here.
  } else if (hash_from && offset == s.hashed) {
    s.hash.update(Bytes(hash_from, static_cast<std::size_t>(n)));
    s.hashed = end;
  }
  if (!s.outside_hash && start <= s.hashed && s.hashed < stop) {
    std::vector<std::uint8_t> buf(static_cast<std::size_t>(std::min<std::uint64_t>(stop - s.hashed, 1u << 20)));
    while (s.hashed < stop) {
      const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), stop - s.hashed));
      const ssize_t k = ferry::posix::pread_full(s.fd.get(), buf.data(), want, s.hashed);
      if (k < 0) return sys_fail("read back " + s.rel);
      if (static_cast<std::size_t>(k) < want) return fail(WriteErrc::io, s.rel + ": temp file shorter than written");
      s.hash.update(Bytes(buf.data(), static_cast<std::size_t>(k)));
      s.hashed += static_cast<std::uint64_t>(k);
    }
  }
  if (!s.half_reported && s.received * 2 >= s.attrs.size) {
    s.half_reported = true;
    s.step(WriteStep::half_written);
  }
  return {};
}

std::expected<void, WriteError> PendingFile::finish() {
  State& s = *state_;
  const bool complete = s.attrs.size == 0 ? s.ranges.empty()
                                          : s.ranges.size() == 1 && s.ranges.begin()->first == 0 &&
                                                s.ranges.begin()->second == s.attrs.size;
  if (!complete) {
    const std::uint64_t first_gap = s.ranges.empty() || s.ranges.begin()->first > 0 ? 0 : s.ranges.begin()->second;
    return fail(WriteErrc::hash_mismatch, s.rel + ": " + std::to_string(s.received) + " of " + std::to_string(s.attrs.size) +
                                              " bytes received (first missing byte at " + std::to_string(first_gap) + ")");
  }
  const bool hash_ok = s.outside_hash ? s.outside_digest == s.attrs.hash
                                      : s.hashed == s.attrs.size && s.hash.digest() == s.attrs.hash;
  if (!hash_ok) {
    return fail(WriteErrc::hash_mismatch, s.rel + ": written bytes do not match the announced size and xxh3-128");
  }
  if (::fchmod(s.fd.get(), s.attrs.mode & 07777) != 0) return sys_fail("chmod " + s.rel);
  const timespec times[2] = {{0, UTIME_NOW}, to_timespec(s.attrs.mtime_ns)};
  if (::futimens(s.fd.get(), times) != 0) return sys_fail("set mtime of " + s.rel);
  return {};
}

std::expected<void, WriteError> PendingFile::sync_data() {
  State& s = *state_;
  if (::fsync(s.fd.get()) != 0) return sys_fail("fsync " + s.rel);
  return {};
}

std::expected<void, WriteError> PendingFile::publish(const std::optional<Precondition>& expect) {
  State& s = *state_;
  if (::close(s.fd.release()) != 0) {
    ::unlinkat(s.dir.get(), s.tmp.c_str(), 0);
    return sys_fail("close " + s.rel);
  }
  auto drop_temp = [&] { ::unlinkat(s.dir.get(), s.tmp.c_str(), 0); };
  if (expect) {
    if (auto ok = check_precondition(s.dir.get(), s.name, *expect, s.rel); !ok) {
      drop_temp();
      return ok;
    }
  }
  struct stat st {};
  if (::fstatat(s.dir.get(), s.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
    drop_temp();
    return fail(WriteErrc::wrong_kind, s.rel + " is a directory on the remote");
  }
  s.step(WriteStep::before_rename);
  if (::renameat(s.dir.get(), s.tmp.c_str(), s.dir.get(), s.name.c_str()) != 0) {
    auto e = sys_fail("rename into " + s.rel);
    drop_temp();
    return e;
  }
  s.step(WriteStep::after_rename);
  return {};
}

std::expected<void, WriteError> PendingFile::commit(const std::optional<Precondition>& expect) {
  if (!state_) return fail(WriteErrc::io, "commit after commit or abort");
  // Whatever happens, this file is finished; the state (and an unrenamed temp) goes at return.
  PendingFile owned;
  owned.state_ = std::move(state_);
  if (auto ok = owned.finish(); !ok) return ok;
  owned.state_->step(WriteStep::before_fsync);
  if (auto ok = owned.sync_data(); !ok) return ok;
  if (auto ok = owned.publish(expect); !ok) return ok;
  ::fsync(owned.dir_fd());  // the rename itself must survive a crash
  return {};
}

FileWriter::FileWriter(FileWriter&& o) noexcept
    : root_(std::move(o.root_)), root_fd_(std::exchange(o.root_fd_, -1)), hook_(std::move(o.hook_)),
      kernel_copy_(std::move(o.kernel_copy_)), prepared_(std::move(o.prepared_)) {}
FileWriter& FileWriter::operator=(FileWriter&& o) noexcept {
  if (root_fd_ >= 0) ::close(root_fd_);
  root_ = std::move(o.root_);
  root_fd_ = std::exchange(o.root_fd_, -1);
  hook_ = std::move(o.hook_);
  kernel_copy_ = std::move(o.kernel_copy_);
  prepared_ = std::move(o.prepared_);
  return *this;
}
FileWriter::~FileWriter() {
  if (root_fd_ >= 0) ::close(root_fd_);
}

std::expected<FileWriter, WriteError> FileWriter::open(const std::filesystem::path& root) {
  auto rp = ferry::agent::RootPath::open(root);
  if (!rp) return fail(WriteErrc::invalid_path, rp.error());
  FileWriter w;
  w.root_ = rp->root();
  w.root_fd_ = ::open(w.root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (w.root_fd_ < 0) return sys_fail("open root " + w.root_.string());
  w.prepared_ = std::make_shared<PreparedBases>();
  return w;
}

std::expected<FileWriter::Parent, WriteError> FileWriter::open_parent(std::string_view rel_in, bool create,
                                                                      DirCache* cache) {
  auto rel = ferry::agent::normalize_wire_path(rel_in);
  if (!rel) return fail(WriteErrc::invalid_path, rel.error());
  if (rel->empty()) return fail(WriteErrc::invalid_path, "the root itself cannot be written");
  Parent p;
  p.rel = *rel;
  const std::size_t last_slash = rel->rfind('/');
  p.name = last_slash == std::string::npos ? *rel : rel->substr(last_slash + 1);
  if (p.name.starts_with(kTempPrefix)) return fail(WriteErrc::invalid_path, "'" + *rel + "' uses ferry's temp prefix");
  const std::string parent_rel = last_slash == std::string::npos ? std::string() : rel->substr(0, last_slash);
  // Start from the deepest directory of the path this batch already opened (the same
  // O_NOFOLLOW walk opened it, so it is inside the root), else from the root.
  std::size_t pos = 0;
  DirRef start;
  if (cache) {
    std::lock_guard lock(cache->mu);
    for (std::string prefix = parent_rel;;) {
      if (auto it = cache->dirs.find(prefix); it != cache->dirs.end()) {
        start = it->second;
        pos = prefix.empty() ? 0 : prefix.size() + 1;
        break;
      }
      if (prefix.empty()) break;
      const std::size_t cut = prefix.rfind('/');
      prefix = cut == std::string::npos ? std::string() : prefix.substr(0, cut);
    }
  }
  if (start.get() >= 0 && pos > parent_rel.size()) {
    p.dir = std::move(start);
    return p;
  }
  auto dir = walk_dirs(start.get() >= 0 ? start.get() : root_fd_, parent_rel, pos, *rel, create);
  if (!dir) return std::unexpected(dir.error());
  p.dir = DirRef(std::move(*dir));
  if (cache) {
    std::lock_guard lock(cache->mu);
    cache->dirs.emplace(parent_rel, p.dir);
  }
  return p;
}

std::expected<void, WriteError> FileWriter::write_part(std::string_view rel, std::string_view temp, std::uint64_t offset,
                                                       Bytes bytes) {
  if (!temp.starts_with(kTempPrefix) || temp.find('/') != std::string_view::npos || temp.find('\0') != std::string_view::npos) {
    std::string why(1, '\'');  // appended, not '+': GCC 12 warns -Wrestrict (falsely) on the '+' chain
    why.append(temp).append("' is not a ferry temp file name");
    return fail(WriteErrc::invalid_path, why);
  }
  auto parent = open_parent(rel, false);
  if (!parent) return std::unexpected(parent.error());
  const std::string name(temp);
  // No O_CREAT: the owning agent made it; a name that is gone (aborted, committed) stays gone.
  const int fd = ::openat(parent->dir.get(), name.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? fail(WriteErrc::not_found, parent->rel + ": its temp file is gone") : sys_fail("open temp file for " + parent->rel);
  Fd held(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return fail(WriteErrc::wrong_kind, parent->rel + ": temp file is not a regular file");
  if (ferry::posix::pwrite_full(fd, bytes.data(), bytes.size(), offset) < 0) return sys_fail("write " + parent->rel);
  return {};
}

std::expected<PendingFile, WriteError> FileWriter::begin_file(std::string_view rel, const FileAttrs& attrs) {
  return begin_file(rel, attrs, nullptr);
}

std::expected<PendingFile, WriteError> FileWriter::begin_file(std::string_view rel, const FileAttrs& attrs,
                                                              DirCache* cache) {
  auto parent = open_parent(rel, true, cache);
  if (!parent) return std::unexpected(parent.error());
  auto state = std::make_unique<PendingFile::State>();
  state->tmp = ferry::posix::temp_name(parent->name);
  const int fd = ::openat(parent->dir.get(), state->tmp.c_str(), O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return sys_fail("create temp file for " + parent->rel);
  state->fd = Fd(fd);
  state->dir = std::move(parent->dir);
  state->name = std::move(parent->name);
  state->rel = std::move(parent->rel);
  state->attrs = attrs;
  state->hook = hook_;
  state->step(WriteStep::temp_created);
  PendingFile f;
  f.state_ = std::move(state);
  return f;
}

std::expected<void, WriteError> FileWriter::write_file(std::string_view rel, Bytes content, const FileAttrs& attrs,
                                                       const std::optional<Precondition>& expect) {
  auto f = begin_file(rel, attrs);
  if (!f) return std::unexpected(f.error());
  // Chunked so a test can stop the process with half the bytes written.
  constexpr std::size_t kChunk = 1u << 20;
  for (std::size_t at = 0; at < content.size(); at += kChunk) {
    if (auto ok = f->write(content.subspan(at, std::min(kChunk, content.size() - at))); !ok) return ok;
  }
  return f->commit(expect);
}

// Why a batch stays atomic per file with one fsync pass and one fsync per directory: a target
// name changes only by rename(2), which swaps in a complete inode or nothing, and no rename
// starts before every temp file of the batch has been written, verified and fsynced (steps 1
// and 2 finish entirely before step 3). So after a crash at any point, each name points either
// at its old inode or at a new one whose data and attributes are already on disk: old or new,
// never torn. The renames themselves become durable with the fsync of their directories
// (step 4) before the reply says "ok", so the helper records only writes that survive a crash;
// a crash before step 4 may lose some renames, which leaves those files old (and the temp
// files, swept by the next sync). Compared with write_file per file, the fsyncs of a batch
// are issued together (the journal can commit them as one) and each directory is fsynced
// once instead of once per file.
std::vector<std::expected<void, WriteError>> FileWriter::write_batch(std::span<const BatchFile> files, unsigned threads) {
  std::vector<std::expected<void, WriteError>> results(files.size());
  std::vector<std::optional<PendingFile>> pending(files.size());
  auto in_parallel = [&](const std::function<void(std::size_t)>& fn) {
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
      for (std::size_t i; (i = next.fetch_add(1)) < files.size();) fn(i);
    };
    std::vector<std::jthread> pool;
    const std::size_t width = std::min<std::size_t>(std::max(threads, 1u), files.size());
    for (std::size_t t = 1; t < width; ++t) pool.emplace_back(worker);
    worker();
  };
  DirCache dirs_opened;
  // 1. Every temp file written, verified, given its mode and mtime.
  in_parallel([&](std::size_t i) {
    const BatchFile& b = files[i];
    auto f = begin_file(b.rel, b.attrs, &dirs_opened);
    if (!f) {
      results[i] = std::unexpected(f.error());
      return;
    }
    constexpr std::size_t kChunk = 1u << 20;  // so a test can stop a process half-way through a file
    for (std::size_t at = 0; at < b.content.size(); at += kChunk) {
      if (auto ok = f->write(b.content.subspan(at, std::min(kChunk, b.content.size() - at))); !ok) {
        results[i] = ok;
        return;
      }
    }
    if (auto ok = f->finish(); !ok) {
      results[i] = ok;
      return;
    }
    pending[i] = std::move(*f);
  });
  step(WriteStep::before_fsync);
  // 2. All of them on disk.
  in_parallel([&](std::size_t i) {
    if (!pending[i]) return;
    if (auto ok = pending[i]->sync_data(); !ok) {
      results[i] = ok;
      pending[i].reset();
    }
  });
  // Before any rename: each directory the batch wrote into is still the one at its path under
  // the root (walked again from the root with O_NOFOLLOW). The batch shares directory
  // descriptors, so a directory renamed out of the root while the batch wrote would otherwise
  // receive the rest of its files; this way it receives none (their temp files are removed).
  std::map<int, bool> inside;
  auto still_inside = [&](int dir, const std::string& rel) {
    auto [it, fresh] = inside.try_emplace(dir, false);
    if (!fresh) return it->second;
    const std::size_t cut = rel.rfind('/');
    auto now_there = walk_dirs(root_fd_, cut == std::string::npos ? std::string() : rel.substr(0, cut), 0, rel, false);
    struct stat now {}, held {};
    it->second = now_there && ::fstat(now_there->get(), &now) == 0 && ::fstat(dir, &held) == 0 &&
                 now.st_dev == held.st_dev && now.st_ino == held.st_ino;
    return it->second;
  };
  // 3. Renames, in order; 4. each distinct directory fsynced once.
  std::set<std::pair<dev_t, ino_t>> seen;
  std::vector<Fd> dirs;
  int last_dir = -1;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!pending[i]) continue;
    const int dir = pending[i]->dir_fd();
    if (!still_inside(dir, pending[i]->state_->rel)) {
      results[i] = fail(WriteErrc::invalid_path, pending[i]->state_->rel + ": its directory left the root during the write");
      pending[i].reset();
      continue;
    }
    struct stat st {};
    // Files of one directory share its descriptor (the cache above): stat it once per run.
    if (dir != last_dir && ::fstat(dir, &st) == 0 && seen.emplace(st.st_dev, st.st_ino).second) dirs.emplace_back(::dup(dir));
    last_dir = dir;
    results[i] = pending[i]->publish(files[i].expect);
    pending[i].reset();
  }
  for (const Fd& d : dirs)
    if (d) ::fsync(d.get());
  return results;
}

std::expected<std::vector<std::uint8_t>, WriteError> FileWriter::signature(
    std::string_view rel, std::optional<ferry::delta::SignatureParams> params,
    std::optional<std::pair<std::uint64_t, std::uint64_t>> range) {
  auto parent = open_parent(rel, false);
  if (!parent) return std::unexpected(parent.error());
  Fd fd(::openat(parent->dir.get(), parent->name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return sys_fail("open " + parent->rel);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_fail("stat " + parent->rel);
  if (!S_ISREG(st.st_mode)) return fail(WriteErrc::wrong_kind, parent->rel + " is not a regular file");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  const std::uint64_t offset = range ? range->first : 0;
  if (range && (range->first > size || range->second > size - range->first))
    return fail(WriteErrc::bad_delta, parent->rel + ": signature range beyond the end of the file");
  const std::uint64_t length = range ? range->second : size;
  std::vector<std::uint8_t> out;
  // Signing 1 GiB is the longest step of a big-file push: shares of it on several threads, each
  // read in pieces (not mapped: on some VMs a fresh mapping's first pass costs ~0.4 s per GiB
  // more than the reads).
  const int fd_num = fd.get();
  const auto read_at = [fd_num](std::uint64_t at, std::uint8_t* buf, std::size_t n) { return ferry::posix::pread_full(fd_num, buf, n, at); };
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  const auto sig_params = params.value_or(ferry::delta::default_params(size));
  auto signed_ok = ferry::delta::sign_in_parallel(read_at, sig_params, offset, length, size, threads, out);
  if (!signed_ok) {
    if (signed_ok.error().code == ferry::delta::DeltaErrc::truncated) return fail(WriteErrc::conflict, parent->rel + " shrank while being signed");
    if (signed_ok.error().code == ferry::delta::DeltaErrc::sink_failed) return fail(WriteErrc::io, parent->rel + ": " + signed_ok.error().message);
    return fail(WriteErrc::bad_delta, signed_ok.error().message);
  }
  struct stat after {};
  if (::fstat(fd.get(), &after) != 0 || after.st_size != st.st_size) return fail(WriteErrc::conflict, parent->rel + " changed while being signed");
  return out;
}

std::expected<void, WriteError> FileWriter::make_symlink(std::string_view rel, std::string_view target) {
  if (target.empty() || target.find('\0') != std::string_view::npos) {
    return fail(WriteErrc::invalid_path, "bad symlink target");
  }
  auto parent = open_parent(rel, true);
  if (!parent) return std::unexpected(parent.error());
  const std::string tmp = ferry::posix::temp_name(parent->name);
  if (::symlinkat(std::string(target).c_str(), parent->dir.get(), tmp.c_str()) != 0) {
    return sys_fail("create symlink " + parent->rel);
  }
  struct stat st {};
  if (::fstatat(parent->dir.get(), parent->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
    ::unlinkat(parent->dir.get(), tmp.c_str(), 0);
    return fail(WriteErrc::wrong_kind, parent->rel + " is a directory on the remote");
  }
  if (::renameat(parent->dir.get(), tmp.c_str(), parent->dir.get(), parent->name.c_str()) != 0) {
    auto e = sys_fail("rename symlink into " + parent->rel);
    ::unlinkat(parent->dir.get(), tmp.c_str(), 0);
    return e;
  }
  ::fsync(parent->dir.get());
  return {};
}

std::expected<void, WriteError> FileWriter::make_dirs(std::string_view rel, std::uint32_t mode) {
  auto parent = open_parent(rel, true);
  if (!parent) return std::unexpected(parent.error());
  if (::mkdirat(parent->dir.get(), parent->name.c_str(), mode & 07777) != 0) {
    if (errno != EEXIST) return sys_fail("mkdir " + parent->rel);
    struct stat st {};
    if (::fstatat(parent->dir.get(), parent->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
      return fail(WriteErrc::wrong_kind, parent->rel + " exists and is not a directory");
    }
    return {};
  }
  // mkdir applies the umask; the synced mode is exact.
  const int fd = ::openat(parent->dir.get(), parent->name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    ::fchmod(fd, mode & 07777);
    ::close(fd);
  }
  ::fsync(parent->dir.get());
  return {};
}

std::expected<void, WriteError> FileWriter::set_attrs(std::string_view rel, std::uint32_t mode,
                                                      std::optional<std::int64_t> mtime_ns) {
  auto parent = open_parent(rel, false);
  if (!parent) return std::unexpected(parent.error());
  struct stat st {};
  if (::fstatat(parent->dir.get(), parent->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return sys_fail("stat " + parent->rel);
  if (S_ISLNK(st.st_mode)) return {};  // Linux symlinks have no mode of their own; never follow
  if (::fchmodat(parent->dir.get(), parent->name.c_str(), mode & 07777, 0) != 0) return sys_fail("chmod " + parent->rel);
  if (mtime_ns) {
    const timespec times[2] = {{0, UTIME_OMIT}, to_timespec(*mtime_ns)};
    if (::utimensat(parent->dir.get(), parent->name.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
      return sys_fail("set mtime of " + parent->rel);
    }
  }
  return {};
}

bool FileWriter::still_at_root() const {
  struct stat held {}, now {};
  if (::fstat(root_fd_, &held) != 0 || held.st_nlink == 0) return false;
  if (::stat(root_.c_str(), &now) != 0) return false;
  return held.st_dev == now.st_dev && held.st_ino == now.st_ino;
}

std::expected<void, WriteError> FileWriter::remove(std::string_view rel, const std::optional<Precondition>& expect) {
  auto parent = open_parent(rel, false);
  if (!parent) {
    if (parent.error().code == WriteErrc::not_found) return {};
    return std::unexpected(parent.error());
  }
  struct stat st {};
  if (::fstatat(parent->dir.get(), parent->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return {};
    return sys_fail("stat " + parent->rel);
  }
  if (S_ISDIR(st.st_mode)) return fail(WriteErrc::wrong_kind, parent->rel + " is a directory");
  if (expect) {
    if (auto ok = check_precondition(parent->dir.get(), parent->name, *expect, parent->rel); !ok) return ok;
  }
  if (::unlinkat(parent->dir.get(), parent->name.c_str(), 0) != 0 && errno != ENOENT) return sys_fail("delete " + parent->rel);
  ::fsync(parent->dir.get());
  return {};
}

std::expected<void, WriteError> FileWriter::remove_dir(std::string_view rel) {
  auto parent = open_parent(rel, false);
  if (!parent) {
    if (parent.error().code == WriteErrc::not_found) return {};
    return std::unexpected(parent.error());
  }
  if (::unlinkat(parent->dir.get(), parent->name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return sys_fail("remove directory " + parent->rel);
  }
  return {};
}

std::expected<std::size_t, WriteError> FileWriter::sweep_temp_files() {
  std::size_t removed = 0;
  std::vector<int> stack{::dup(root_fd_)};
  while (!stack.empty()) {
    const int fd = stack.back();
    stack.pop_back();
    DIR* d = ::fdopendir(fd);
    if (!d) {
      ::close(fd);
      continue;
    }
    while (dirent* de = ::readdir(d)) {
      const std::string_view name = de->d_name;
      if (name == "." || name == "..") continue;
      struct stat st {};
      if (::fstatat(::dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        const int child = ::openat(::dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (child >= 0) stack.push_back(child);
      } else if (name.starts_with(kTempPrefix)) {
        if (::unlinkat(::dirfd(d), de->d_name, 0) == 0) ++removed;
      }
    }
    ::closedir(d);
  }
  return removed;
}

}  // namespace ferry::agent::sync

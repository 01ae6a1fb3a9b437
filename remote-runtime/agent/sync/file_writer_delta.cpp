// FileWriter::apply_delta: a pushed delta rebuilt against the file the agent holds, into a temp
// file committed like any other write (see file_writer.hpp). The unchanged ranges go from the old
// file to the temp file in the kernel (RangeCopier: a reflink on btrfs/xfs, else
// copy_file_range), or are there already in a copy sync/prepareDelta made
// (file_writer_prepare.cpp); the whole-file xxh3-128 is still computed over every output byte,
// once, on a second thread while the first writes: literal bytes from the delta, copied ones
// read back from the old file (the output is what the ops say, so it is hashed from its
// sources), ranges left in place in a prepared copy read back from that copy.
// The old file's block hashes cannot stand in for that pass: a whole-file hash does not compose
// from block hashes, and it is what catches a base that is not what the helper thinks it is.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <optional>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "common/copy_range.hpp"
#include "common/full_io.hpp"
#include "common/posix/stat_times.hpp"
#include "common/unique_fd.hpp"
#include "protocol/delta/patch.hpp"
#include "remote-runtime/agent/sync/file_writer.hpp"
#include "remote-runtime/agent/sync/file_writer_parent.hpp"

namespace ferry::agent::sync {
namespace {

// The delta's copies go in kCopyPiece pieces (common/copy_range.hpp) so the hash reads what the
// kernel has just copied while it is still in the CPU's caches, and a test's kill hook can stop a
// process half-way.
using ferry::posix::kCopyPiece;
constexpr std::uint64_t kHashPiece = 1u << 20;

std::unexpected<WriteError> fail(WriteErrc code, std::string message) { return std::unexpected(WriteError{code, std::move(message)}); }

std::unexpected<WriteError> sys_fail(const std::string& what) {
  const int e = errno;
  const WriteErrc code = e == ENOENT ? WriteErrc::not_found : e == ENOSPC || e == EDQUOT ? WriteErrc::no_space : WriteErrc::io;
  return fail(code, what + ": " + std::strerror(e));
}

// The old file, renamed over, lives on only through `fd`: closing it frees all its pages (a
// 1 GiB file: ~0.4 s of kernel time on tmpfs), which need not delay the reply.
void release_later(ferry::posix::UniqueFd fd) {
  std::thread([fd = std::move(fd)]() mutable { fd.reset(); }).detach();
}

// The xxh3-128 of what `delta` builds from the old file (`base_fd`, `base_size` bytes):
// delta::hash_delta_output with copied ranges read back by pread into one buffer (not a mapping:
// on some VMs a fresh mapping's first pass costs ~0.4 s per GiB more than the reads). With a
// prepared copy (`prepared_fd`, else -1) the ranges that stay where they were are read from that
// copy, the bytes that will be committed, not from the old file. Nullopt for a delta that does
// not read or a base that shrank (the commit then refuses the file); stops early on `stop`.
std::optional<Hash128> hash_output(Bytes delta, int base_fd, std::uint64_t base_size, int prepared_fd, const std::atomic<bool>& stop) {
  auto read = [&](std::uint64_t offset, ferry::delta::MutableBytes into, bool in_place) {
    const int from = in_place && prepared_fd >= 0 ? prepared_fd : base_fd;
    return ferry::posix::pread_full(from, into.data(), into.size(), offset) == static_cast<ssize_t>(into.size());
  };
  auto h = ferry::delta::hash_delta_output(delta, base_size, read, stop, kHashPiece);
  if (!h) return std::nullopt;
  return *h;
}

}  // namespace

std::expected<void, WriteError> FileWriter::apply_delta(std::string_view rel, Bytes delta, const FileAttrs& attrs,
                                                        const std::optional<Precondition>& expect) {
  auto parent = open_parent(rel, false);
  if (!parent) return std::unexpected(parent.error());
  ferry::posix::UniqueFd base(::openat(parent->dir.get(), parent->name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!base) return sys_fail("open delta base " + parent->rel);
  struct stat st {};
  if (::fstat(base.get(), &st) != 0) return sys_fail("stat " + parent->rel);
  if (!S_ISREG(st.st_mode)) return fail(WriteErrc::wrong_kind, parent->rel + " is not a regular file");
  if (expect && (!expect->exists || static_cast<std::uint64_t>(st.st_size) != expect->size ||
                 ferry::posix::mtime_of(st) != expect->mtime_ns)) {
    return fail(WriteErrc::conflict, parent->rel + " changed on the remote since the sync was planned");
  }
  const auto base_size = static_cast<std::uint64_t>(st.st_size);
  auto reader = ferry::delta::DeltaReader::open(delta);
  if (!reader) return fail(WriteErrc::bad_delta, parent->rel + ": " + reader.error().message);
  const ferry::delta::DeltaHeader& head = reader->header();
  if (head.base_size != base_size)
    return fail(WriteErrc::bad_delta, parent->rel + ": the delta was made against a " + std::to_string(head.base_size) +
                                          "-byte file, the remote one has " + std::to_string(base_size));
  if (head.output_size != attrs.size || head.output_hash != attrs.hash)
    return fail(WriteErrc::bad_delta, parent->rel + ": the delta does not produce the announced file");
  // A copy sync/prepareDelta started holds the old file already: only what moved or changed is
  // written into it.
  std::optional<PendingFile> prepared = take_prepared(parent->rel, st);
  auto f = prepared ? std::expected<PendingFile, WriteError>(std::move(*prepared)) : begin_file(rel, attrs);
  if (!f) return std::unexpected(f.error());
  const int prepared_fd = prepared ? f->temp_fd() : -1;
  if (prepared) {
    f->retarget(attrs);
    if (attrs.size < base_size && ::ftruncate(prepared_fd, static_cast<off_t>(attrs.size)) != 0) return sys_fail("truncate " + parent->rel);
  }
  f->hash_outside();
  std::atomic<bool> stop{false};
  struct Stop {
    std::atomic<bool>& flag;
    ~Stop() { flag = true; }
  };
  std::future<std::optional<Hash128>> hashed =
      std::async(std::launch::async, [&] { return hash_output(delta, base.get(), base_size, prepared_fd, stop); });
  const Stop stop_on_return{stop};  // destroyed before `hashed`: an early return stops the hashing
  ferry::posix::RangeCopier copier(kernel_copy_);
  std::uint64_t out_at = 0;
  for (;;) {
    auto op = reader->next();
    if (!op) return fail(WriteErrc::bad_delta, parent->rel + ": " + op.error().message);
    if (!*op) break;
    const ferry::delta::DeltaOp& o = **op;
    if (o.length > head.output_size - out_at) return fail(WriteErrc::bad_delta, parent->rel + ": the delta writes past its declared size");
    if (o.kind == ferry::delta::DeltaOp::Kind::literal) {
      if (auto ok = f->write_at(out_at, o.data); !ok) return ok;
      out_at += o.length;
      continue;
    }
    if (o.offset > base_size || o.length > base_size - o.offset)
      return fail(WriteErrc::bad_delta, parent->rel + ": a copy outside the old file");
    if (prepared_fd >= 0 && o.offset == out_at) {  // already there in the prepared copy
      if (auto ok = f->mark_placed(out_at, o.length); !ok) return ok;
      out_at += o.length;
      continue;
    }
    for (std::uint64_t done = 0; done < o.length;) {
      const std::uint64_t n = std::min(kCopyPiece, o.length - done);
      if (auto ok = f->copy_from(base.get(), o.offset + done, out_at, n, copier); !ok) return ok;
      out_at += n;
      done += n;
    }
  }
  if (out_at != head.output_size) return fail(WriteErrc::bad_delta, parent->rel + ": the delta ends before its declared size");
  if (auto digest = hashed.get()) f->set_outside_digest(*digest);
  auto committed = f->commit(expect);
  if (committed) release_later(std::move(base));
  return committed;
}

}  // namespace ferry::agent::sync

// Applying sync writes on the remote, atomically and verified: every file is written to a temp
// file in its own directory, checked against the whole-file xxh3-128 the helper sent, given its
// mode and mtime, fsynced, renamed over the target, and the directory fsynced (a batch of small
// files pays those fsyncs once per batch and directory, see write_batch). An interrupted
// sync therefore leaves the old or the new file, never a torn one. Paths are validated like
// every wire path (normalize_wire_path: no "..", not absolute) and then walked one component at
// a time with O_NOFOLLOW from the root's descriptor, so no symlink, even one swapped in
// mid-write, can lead a write out of the root. A batch shares one descriptor per directory
// among its files, and before its renames walks each directory's path again from the root: a
// directory renamed out of the root meanwhile gets none of the batch's files.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/temp_name.hpp"
#include "protocol/delta/delta_types.hpp"
#include "protocol/delta/signature.hpp"

namespace ferry::posix {
class RangeCopier;
}

namespace ferry::agent::sync {

using ferry::delta::Bytes;
using ferry::delta::Hash128;

enum class WriteErrc {
  invalid_path,    // rejected by validation, or a symlink/non-directory in the parent chain
  not_found,
  io,              // a system call failed (message says which, with errno text)
  hash_mismatch,   // the written bytes are not what the helper announced
  bad_delta,       // the delta was rejected (bounds, base, encoding)
  conflict,        // the target changed since the helper planned this write
  wrong_kind,      // e.g. a directory where a file should go
  no_space,        // the filesystem is full (ENOSPC) or the user's quota is (EDQUOT)
};

struct WriteError {
  WriteErrc code;
  std::string message;
};

// What the file must end up as.
struct FileAttrs {
  std::uint64_t size = 0;
  Hash128 hash{};
  std::uint32_t mode = 0644;
  std::int64_t mtime_ns = 0;
};

// The target as the helper last saw it; checked just before the rename so a file changed
// behind ferry's back in the meantime is reported, not overwritten.
struct Precondition {
  bool exists = false;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
};

// Points at which a test may kill the writing process (see tests/unit/sync/test_file_writer).
enum class WriteStep { temp_created, half_written, before_fsync, before_rename, after_rename };

inline constexpr std::string_view kTempPrefix = ferry::posix::kTempPrefix;

class FileWriter;

// A file being written: bytes stream in, then commit() verifies and renames. Dropping it
// without commit removes the temp file.
class PendingFile {
 public:
  PendingFile(PendingFile&&) noexcept;
  PendingFile& operator=(PendingFile&&) noexcept;
  ~PendingFile();
  // Appends after the furthest byte received so far.
  std::expected<void, WriteError> write(Bytes bytes);
  // Bytes at `offset`, for chunks that arrive out of order (several in flight). Refused: bytes
  // past the announced size, or overlapping bytes already received. The whole-file hash is
  // computed as the received prefix grows (a piece that arrived early is read back once).
  std::expected<void, WriteError> write_at(std::uint64_t offset, Bytes bytes);
  // Bytes [offset, offset + length) that a sibling agent already wrote into this temp file
  // (FileWriter::write_part, over another SSH channel): recorded as received, under the same
  // rules as write_at, and hashed by reading them back.
  std::expected<void, WriteError> mark_placed(std::uint64_t offset, std::uint64_t length);
  // The temp file's name in the target's directory (what write_part needs).
  std::string temp_name() const;
  std::uint64_t received() const;
  // Fails (hash_mismatch) unless every byte of [0, size) was received exactly once and the
  // content hashes to the announced xxh3-128.
  std::expected<void, WriteError> commit(const std::optional<Precondition>& expect = std::nullopt);
  void abort();

 private:
  friend class FileWriter;
  PendingFile();  // out of line: State is complete only in file_writer.cpp
  // The stages of commit(), which write_batch runs across many files at once.
  std::expected<void, WriteError> finish();  // verify, mode, mtime
  // write_at's bookkeeping: checks the range, then (with `bytes` when they are not yet in the file)
  // records it and extends the hashed prefix, hashing from `hash_from` (the same bytes in memory)
  // when given, else reading them back from the file.
  std::expected<void, WriteError> record(std::uint64_t offset, std::uint64_t n, const std::uint8_t* bytes,
                                         const std::uint8_t* hash_from);
  // A delta's COPY: base[base_offset, +n) copied into the file at `offset` by the kernel (no pass
  // through user space). Only after hash_outside(): the caller hashes the output itself.
  std::expected<void, WriteError> copy_from(int base_fd, std::uint64_t base_offset, std::uint64_t offset, std::uint64_t n,
                                            ferry::posix::RangeCopier& copier);
  // From now on bytes are recorded unhashed; commit() compares the digest given here (none given:
  // hash_mismatch) with the announced hash.
  void hash_outside();
  void set_outside_digest(const Hash128& digest);
  std::expected<void, WriteError> sync_data();
  std::expected<void, WriteError> publish(const std::optional<Precondition>& expect);  // rename, no dir fsync
  int dir_fd() const;
  // For a copy prepare_delta_base made: its descriptor, whether its name still leads to it (a
  // sweep by another sync may have unlinked it), and the file it is to become after all.
  int temp_fd() const;
  bool temp_still_named() const;
  void retarget(const FileAttrs& attrs);
  struct State;
  std::unique_ptr<State> state_;
};

// One file of a write_batch.
struct BatchFile {
  std::string_view rel;
  Bytes content;
  FileAttrs attrs;
  std::optional<Precondition> expect;
};

class FileWriter {
 public:
  using StepHook = std::function<void(WriteStep)>;

  // The root must exist (RootPath::open creates it).
  static std::expected<FileWriter, WriteError> open(const std::filesystem::path& root);
  FileWriter(FileWriter&&) noexcept;
  FileWriter& operator=(FileWriter&&) noexcept;
  ~FileWriter();

  void set_step_hook(StepHook hook) { hook_ = std::move(hook); }
  // Replaces copy_file_range(2) for apply_delta's unchanged ranges: tests make it fail (EXDEV) to
  // exercise the read/write fallback. Empty: the system call.
  using KernelCopy = std::function<ssize_t(int, std::uint64_t, int, std::uint64_t, std::size_t)>;
  void set_kernel_copy(KernelCopy copy) { kernel_copy_ = std::move(copy); }

  // Missing parents are created (0755).
  std::expected<PendingFile, WriteError> begin_file(std::string_view rel, const FileAttrs& attrs);
  std::expected<void, WriteError> write_file(std::string_view rel, Bytes content, const FileAttrs& attrs,
                                             const std::optional<Precondition>& expect = std::nullopt);
  // Many small files, as atomic as write_file each but with the durability paid once per
  // batch: all temp files written, then all fsynced, then all renamed, then each distinct
  // directory fsynced once (the crash argument is at the definition). `threads` write and
  // fsync concurrently. One result per file, in order; one failure fails only its file.
  std::vector<std::expected<void, WriteError>> write_batch(std::span<const BatchFile> files, unsigned threads = 1);
  // Applies a ferry delta against the current file at `rel` into a temp file, then commits. The
  // unchanged ranges (COPY) are copied by the kernel (reflinked where the file system can) and
  // hashed from the old file's mapping; literal bytes are written and hashed as they come: the
  // result is hashed once, its bytes never pass through a user-space buffer twice.
  std::expected<void, WriteError> apply_delta(std::string_view rel, Bytes delta, const FileAttrs& attrs,
                                              const std::optional<Precondition>& expect = std::nullopt);
  // Starts copying the file at `rel` into a temp file beside it, on a thread of its own, while the
  // helper is still making the delta it is about to send (an edit that kept the file's size: most
  // of the output is the old file where it was). apply_delta then writes only what moved or
  // changed, if the file is still the one copied. False, nothing started: the file is not as
  // `expect` says, or not a regular file. A copy apply_delta does not take within
  // kPreparedLifetime, or that a second prepare of the same path replaces, or that is still
  // held when the writer goes, is deleted.
  std::expected<bool, WriteError> prepare_delta_base(std::string_view rel, const std::optional<Precondition>& expect = std::nullopt);
  // The copy prepared for `rel`, if any, stopped and deleted (the helper will not send its delta).
  void drop_prepared(std::string_view rel);
  // How many apply_delta calls built on a prepared copy (tests and the bench read it).
  std::uint64_t prepared_used() const;
  // The signature the helper needs to delta against the file at `rel`: of the whole file, or
  // of bytes [offset, offset + length) only (the second level of a two-level delta).
  std::expected<std::vector<std::uint8_t>, WriteError> signature(
      std::string_view rel, std::optional<ferry::delta::SignatureParams> params,
      std::optional<std::pair<std::uint64_t, std::uint64_t>> range = std::nullopt);
  // Creates or retargets a symlink atomically (temp link + rename). The target is stored, not
  // followed or checked: following is what the rest of the agent never does.
  std::expected<void, WriteError> make_symlink(std::string_view rel, std::string_view target);
  std::expected<void, WriteError> make_dirs(std::string_view rel, std::uint32_t mode = 0755);
  std::expected<void, WriteError> set_attrs(std::string_view rel, std::uint32_t mode,
                                            std::optional<std::int64_t> mtime_ns);
  // A file or symlink (never followed). Missing is not an error: deletes are idempotent. With
  // `expect`, a file that is no longer what the helper last wrote is a conflict and stays.
  std::expected<void, WriteError> remove(std::string_view rel, const std::optional<Precondition>& expect = std::nullopt);
  // An empty directory.
  std::expected<void, WriteError> remove_dir(std::string_view rel);
  // Writes `bytes` at `offset` into the temp file `temp` (a kTempPrefix name, no '/') that another
  // agent's begin_file made beside `rel`: one big file carried over several channels. Only an
  // existing regular file is written (never created, no symlink followed); the owning agent's
  // commit checks coverage and the whole-file hash as for its own bytes.
  std::expected<void, WriteError> write_part(std::string_view rel, std::string_view temp, std::uint64_t offset, Bytes bytes);
  // Deletes temp files an interrupted sync left behind (walks the tree, no symlinks followed).
  std::expected<std::size_t, WriteError> sweep_temp_files();

  const std::filesystem::path& root() const { return root_; }
  // False once the directory this writer holds open is no longer the one at root() (removed
  // or replaced behind the agent's back): the caller opens a new writer.
  bool still_at_root() const;

 private:
  FileWriter() = default;
  friend class PendingFile;
  struct Parent;
  struct DirCache;
  struct PreparedBase;
  struct PreparedBases;
  // The prepared copy of the file at `rel` (`now`: the stat of the file apply_delta opened), if
  // it was made of this very file, unchanged, and its temp is still there; removed from the
  // registry either way, with the copies past their lifetime.
  std::optional<PendingFile> take_prepared(const std::string& rel, const struct stat& now);
  // `cache`: directories already opened by this batch, so files side by side share one
  // descriptor instead of each walking the path again.
  std::expected<Parent, WriteError> open_parent(std::string_view rel, bool create, DirCache* cache = nullptr);
  std::expected<PendingFile, WriteError> begin_file(std::string_view rel, const FileAttrs& attrs, DirCache* cache);
  void step(WriteStep s) const {
    if (hook_) hook_(s);
  }

  std::filesystem::path root_;
  int root_fd_ = -1;
  StepHook hook_;
  KernelCopy kernel_copy_;
  std::shared_ptr<PreparedBases> prepared_;  // shared: a moved writer keeps its copies
};

// How long a prepared copy waits for its apply_delta (deleted at the next prepare or apply after).
inline constexpr std::chrono::seconds kPreparedLifetime{60};

}  // namespace ferry::agent::sync

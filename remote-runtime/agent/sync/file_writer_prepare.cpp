// FileWriter::prepare_delta_base and take_prepared: the old file copied into a temp file beside it
// while the helper is still making the delta it will push (sync/prepareDelta). An edit that kept
// a big file's size leaves most of the output where the old file has it, so apply_delta, once
// the delta arrives, writes only the literals and the moved ranges into this copy. The copy
// (~0.3-2 s per GiB on tmpfs, most of it the kernel allocating pages) then runs beside the
// helper's hashing instead of after it. Nothing here is trusted: apply_delta hashes the output's
// unmoved ranges from this copy, so a copy that is not what the helper diffed against fails the
// whole-file check instead of landing.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/copy_range.hpp"
#include "common/posix/stat_times.hpp"
#include "remote-runtime/agent/sync/file_writer.hpp"
#include "remote-runtime/agent/sync/file_writer_parent.hpp"

namespace ferry::agent::sync {
namespace {

std::unexpected<WriteError> sys_fail(const std::string& what) {
  const int e = errno;
  const WriteErrc code = e == ENOENT ? WriteErrc::not_found : e == ENOSPC || e == EDQUOT ? WriteErrc::no_space : WriteErrc::io;
  return std::unexpected(WriteError{code, what + ": " + std::strerror(e)});
}

}  // namespace

std::expected<bool, WriteError> FileWriter::prepare_delta_base(std::string_view rel, const std::optional<Precondition>& expect) {
  auto parent = open_parent(rel, false);
  if (!parent) return std::unexpected(parent.error());
  ferry::posix::UniqueFd base(::openat(parent->dir.get(), parent->name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!base) return errno == ENOENT || errno == ELOOP ? std::expected<bool, WriteError>(false) : sys_fail("open " + parent->rel);
  struct stat st {};
  if (::fstat(base.get(), &st) != 0) return sys_fail("stat " + parent->rel);
  if (!S_ISREG(st.st_mode)) return false;
  if (expect && (!expect->exists || static_cast<std::uint64_t>(st.st_size) != expect->size || ferry::posix::mtime_of(st) != expect->mtime_ns))
    return false;
  auto temp = begin_file(rel, FileAttrs{static_cast<std::uint64_t>(st.st_size), {}, 0600, 0});
  if (!temp) return std::unexpected(temp.error());
  temp->hash_outside();
  auto p = std::make_unique<PreparedBase>();
  p->file = std::move(*temp);
  p->base = std::move(base);
  p->before = st;
  p->made = std::chrono::steady_clock::now();
  PreparedBase& held = *p;
  p->copied = std::async(std::launch::async, [&held, temp_fd = p->file.temp_fd(), copy = kernel_copy_] {
    ferry::posix::RangeCopier copier(copy);
    return ferry::posix::copy_while_unchanged(held.base.get(), ferry::posix::file_stat_of(held.before), temp_fd, held.stop,
                                              copier);
  });
  std::vector<std::unique_ptr<PreparedBase>> gone;  // freed outside the lock: each may wait for its thread
  std::lock_guard lock(prepared_->mu);
  prepared_->take_expired(gone);
  gone.push_back(std::exchange(prepared_->by_rel[parent->rel], std::move(p)));
  return true;
}

std::optional<PendingFile> FileWriter::take_prepared(const std::string& rel, const struct stat& now) {
  std::unique_ptr<PreparedBase> p;
  std::vector<std::unique_ptr<PreparedBase>> expired;  // freed after the lock is released
  {
    std::lock_guard lock(prepared_->mu);
    if (auto it = prepared_->by_rel.find(rel); it != prepared_->by_rel.end()) {
      p = std::move(it->second);
      prepared_->by_rel.erase(it);
    }
    prepared_->take_expired(expired);
  }
  // Of the inode apply_delta opened, unchanged (not written, nor another file renamed over it
  // since; checked first: a useless copy is stopped, not waited for), whole, and the temp file
  // still under its name (a sweep by another sync would have unlinked it).
  if (!p || !ferry::posix::same_file_state(p->before, now) || !p->copied.get() || !p->file.temp_still_named()) return std::nullopt;
  prepared_->used.fetch_add(1, std::memory_order_relaxed);
  return std::move(p->file);
}

void FileWriter::drop_prepared(std::string_view rel) {
  auto parent = open_parent(rel, false);
  if (!parent) return;  // no directory, so no copy in it
  std::unique_ptr<PreparedBase> gone;  // freed after the lock is released: it waits for its thread
  std::lock_guard lock(prepared_->mu);
  if (auto it = prepared_->by_rel.find(parent->rel); it != prepared_->by_rel.end()) {
    gone = std::move(it->second);
    prepared_->by_rel.erase(it);
  }
}

std::uint64_t FileWriter::prepared_used() const { return prepared_ ? prepared_->used.load(std::memory_order_relaxed) : 0; }

}  // namespace ferry::agent::sync

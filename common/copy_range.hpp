// Copying a byte range from one file into another without passing it through user space: a
// reflink (FICLONERANGE) where the file system shares extents (btrfs, xfs), else
// copy_file_range(2) (the kernel copies page to page), else pread/pwrite. What a delta's
// unchanged ranges go through when a big file is rebuilt from its old version, and what a whole
// file copied ahead of a delta goes through. On Windows only pread/pwrite: the reflink and the
// kernel copy are POSIX's (platform_io.hpp), refused there at once.
#pragma once

#include <sys/types.h>

#include <atomic>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "common/file_times.hpp"

namespace ferry::posix {

// One object per rebuilt file: a method that is refused once (another file system, a kernel
// without it) is not tried again for the rest of the file.
class RangeCopier {
 public:
  // copy_file_range(2)'s shape with explicit offsets; a test passes one that fails to exercise
  // the fallbacks (the real system call is used otherwise).
  using KernelCopy = std::function<ssize_t(int in_fd, std::uint64_t in_off, int out_fd, std::uint64_t out_off, std::size_t n)>;

  struct Counts {
    std::uint64_t cloned = 0;  // bytes shared by FICLONERANGE
    std::uint64_t kernel = 0;  // bytes copied by copy_file_range
    std::uint64_t user = 0;    // bytes read and written here
  };

  RangeCopier() = default;
  explicit RangeCopier(KernelCopy kernel, bool try_clone = true) : kernel_(std::move(kernel)), clone_ok_(try_clone) {}

  // Copies in[in_off, in_off + n) to out[out_off, ...). Returns n, fewer only when `in` ended
  // first, or -1 with errno set (the first error that no fallback can get around: EIO, ENOSPC).
  ssize_t copy(int in_fd, std::uint64_t in_off, int out_fd, std::uint64_t out_off, std::size_t n);

  const Counts& counts() const { return counts_; }

 private:
  bool try_clone(int in_fd, std::uint64_t in_off, int out_fd, std::uint64_t out_off, std::size_t n);
  ssize_t user_copy(int in_fd, std::uint64_t in_off, int out_fd, std::uint64_t out_off, std::size_t n);

  KernelCopy kernel_;
  bool clone_ok_ = true;
  bool kernel_ok_ = true;
  Counts counts_;
};

// All of `in_fd` (`before`: its stat as the copy began) copied to the same offsets of `out_fd`,
// in pieces of kCopyPiece so `stop` can end it between two. True only when the copy is whole
// and `in_fd` still has `before`'s state afterwards (same_file_state): what a copy made ahead of
// a same-size delta (the agent's sync/prepareDelta, a pull's BaseCopy) needs before it is used.
inline constexpr std::uint64_t kCopyPiece = 8u << 20;
bool copy_while_unchanged(int in_fd, const FileStat& before, int out_fd, const std::atomic<bool>& stop, RangeCopier& copier);

// True for the errors after which copy_file_range(2) or FICLONERANGE will not work between these
// two files (so the next method is tried), as opposed to a real I/O error.
bool copy_method_unsupported(int err);

}  // namespace ferry::posix

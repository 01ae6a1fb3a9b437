// Range copies in the kernel with fallbacks (see copy_range.hpp): the order of the methods and
// when to give one up; the system calls themselves are the platform's (platform_io.hpp).
#include "common/copy_range.hpp"

#include <algorithm>
#include <cerrno>
#include <vector>

#include "common/full_io.hpp"
#include "common/platform_io.hpp"

namespace ferry::posix {
namespace {

constexpr std::uint64_t kCloneAlign = 4096;       // the common block size; a misaligned clone is EINVAL anyway
constexpr std::size_t kUserBlock = 1u << 20;
constexpr std::size_t kKernelStep = 1u << 30;     // copy_file_range's count is a size_t, but stay well inside ssize_t

}  // namespace

bool copy_method_unsupported(int err) {
  return err == EXDEV || err == EINVAL || err == ENOSYS || err == EOPNOTSUPP || err == ENOTTY || err == EBADF || err == ETXTBSY;
}

bool RangeCopier::try_clone(int in_fd, std::uint64_t in_off, int out_fd, std::uint64_t out_off, std::size_t n) {
  if (!clone_ok_ || n == 0 || in_off % kCloneAlign || out_off % kCloneAlign || n % kCloneAlign) return false;
  const int err = os::clone_range(in_fd, in_off, out_fd, out_off, n);
  if (err == 0) {
    counts_.cloned += n;
    return true;
  }
  // EINVAL is this range (alignment, past the source's end): the next one may clone. Anything
  // else says this pair of files never will.
  if (err != EINVAL) clone_ok_ = false;
  return false;
}

ssize_t RangeCopier::user_copy(int in_fd, std::uint64_t in_off, int out_fd, std::uint64_t out_off, std::size_t n) {
  std::vector<std::uint8_t> buf(std::min(n, kUserBlock));
  std::size_t done = 0;
  while (done < n) {
    const std::size_t want = std::min(buf.size(), n - done);
    const ssize_t got = pread_full(in_fd, buf.data(), want, in_off + done);
    if (got < 0) return -1;
    if (got == 0) break;
    if (pwrite_full(out_fd, buf.data(), static_cast<std::size_t>(got), out_off + done) < 0) return -1;
    done += static_cast<std::size_t>(got);
    counts_.user += static_cast<std::uint64_t>(got);
    if (static_cast<std::size_t>(got) < want) break;
  }
  return static_cast<ssize_t>(done);
}

ssize_t RangeCopier::copy(int in_fd, std::uint64_t in_off, int out_fd, std::uint64_t out_off, std::size_t n) {
  if (try_clone(in_fd, in_off, out_fd, out_off, n)) return static_cast<ssize_t>(n);
  std::size_t done = 0;
  while (kernel_ok_ && done < n) {
    const std::size_t step = std::min(n - done, kKernelStep);
    const ssize_t got = kernel_ ? kernel_(in_fd, in_off + done, out_fd, out_off + done, step)
                                : os::kernel_copy(in_fd, in_off + done, out_fd, out_off + done, step);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (!copy_method_unsupported(errno)) return -1;
      kernel_ok_ = false;  // the rest, and the rest of this file, through user space
      break;
    }
    if (got == 0) return static_cast<ssize_t>(done);  // the source ended
    done += static_cast<std::size_t>(got);
    counts_.kernel += static_cast<std::uint64_t>(got);
  }
  if (done == n) return static_cast<ssize_t>(n);
  const ssize_t rest = user_copy(in_fd, in_off + done, out_fd, out_off + done, n - done);
  if (rest < 0) return -1;
  return static_cast<ssize_t>(done + static_cast<std::size_t>(rest));
}

bool copy_while_unchanged(int in_fd, const FileStat& before, int out_fd, const std::atomic<bool>& stop, RangeCopier& copier) {
  const std::uint64_t size = before.size;
  for (std::uint64_t at = 0; at < size;) {
    if (stop.load(std::memory_order_relaxed)) return false;
    const std::uint64_t n = std::min(kCopyPiece, size - at);
    if (copier.copy(in_fd, at, out_fd, at, static_cast<std::size_t>(n)) != static_cast<ssize_t>(n)) return false;
    at += n;
  }
  FileStat after;
  return stat_fd(in_fd, after) == 0 && same_file_state(before, after);
}

}  // namespace ferry::posix

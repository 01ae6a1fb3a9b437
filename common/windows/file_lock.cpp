// try_lock_exclusive on Windows (see file_lock.hpp): LockFileEx without waiting, on the byte at
// 2^62 (Windows locks ranges, and a locked range cannot be read by others: the content stays free).
#include "common/file_lock.hpp"

#include <cerrno>

#include "common/windows/win32.hpp"

namespace ferry::posix {

int try_lock_exclusive(int fd) {
  const HANDLE h = win::handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return EBADF;
  OVERLAPPED at{};
  at.OffsetHigh = 0x40000000;  // 2^62
  if (::LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &at)) return 0;
  const DWORD error = ::GetLastError();
  return error == ERROR_LOCK_VIOLATION || error == ERROR_IO_PENDING ? EWOULDBLOCK : win::errno_of(error);
}

}  // namespace ferry::posix

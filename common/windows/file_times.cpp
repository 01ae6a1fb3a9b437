// stat_fd and set_mtime_fd on Windows (see file_times.hpp): the handle's file information, and
// SetFileTime in 100 ns ticks (through a second handle with the right to write attributes when the
// descriptor was opened for reading only).
#include "common/file_times.hpp"

#include <cerrno>

#include "common/windows/win32.hpp"

namespace ferry::posix {

int stat_fd(int fd, FileStat& out) {
  out = {};
  const HANDLE h = win::handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return EBADF;
  return win::stat_handle(h, out);
}

int set_mtime_fd(int fd, std::int64_t mtime_ns) {
  const HANDLE h = win::handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return EBADF;
  const auto ticks = static_cast<std::uint64_t>(win::ticks_of_ns(mtime_ns));
  const FILETIME ft{static_cast<DWORD>(ticks), static_cast<DWORD>(ticks >> 32)};
  if (::SetFileTime(h, nullptr, nullptr, &ft)) return 0;
  if (::GetLastError() != ERROR_ACCESS_DENIED) return win::errno_of(::GetLastError());
  const HANDLE w = ::ReOpenFile(h, FILE_WRITE_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, 0);
  if (w == INVALID_HANDLE_VALUE) return win::errno_of(::GetLastError());
  const bool ok = ::SetFileTime(w, nullptr, nullptr, &ft);
  const DWORD error = ::GetLastError();
  ::CloseHandle(w);
  return ok ? 0 : win::errno_of(error);
}

}  // namespace ferry::posix

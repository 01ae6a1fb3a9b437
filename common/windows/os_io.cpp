// The single calls of platform_io.hpp on Windows: the C runtime's _read/_write, positioned reads
// and writes through the descriptor's handle (ReadFile/WriteFile at an OVERLAPPED offset, the
// handle's file pointer put back after), and no kernel copy or reflink to offer.
#include "common/platform_io.hpp"

#include <io.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>

#include "common/windows/win32.hpp"

namespace ferry::posix::os {
namespace {

constexpr std::size_t kMaxStep = 1u << 30;  // the C runtime and Win32 count in 32 bits

OVERLAPPED at_offset(std::uint64_t offset) {
  OVERLAPPED o{};
  o.Offset = static_cast<DWORD>(offset);
  o.OffsetHigh = static_cast<DWORD>(offset >> 32);
  return o;
}

// The handle for a positioned call on `fd`, with its file pointer in `pointer`; nullptr with
// errno set when `fd` is no file (ESPIPE, as pread gives on a pipe) or no descriptor (EBADF).
HANDLE positioned_handle(int fd, LARGE_INTEGER& pointer) {
  const HANDLE h = win::handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return nullptr;
  if (::GetFileType(h) != FILE_TYPE_DISK) {
    errno = ESPIPE;
    return nullptr;
  }
  if (!::SetFilePointerEx(h, LARGE_INTEGER{}, &pointer, FILE_CURRENT)) {
    win::fail_with_last_error();
    return nullptr;
  }
  return h;
}

// What a ReadFile/WriteFile at an offset came to: the count, 0 for a read at or past the end of
// the file, or -1 with errno set; the file pointer it moved is put back.
ssize_t positioned_result(HANDLE h, BOOL ok, DWORD moved, LARGE_INTEGER pointer) {
  const DWORD error = ok ? ERROR_SUCCESS : ::GetLastError();
  ::SetFilePointerEx(h, pointer, nullptr, FILE_BEGIN);
  if (ok || error == ERROR_HANDLE_EOF) return static_cast<ssize_t>(moved);
  errno = win::errno_of(error);
  return -1;
}

}  // namespace

ssize_t read_some(int fd, void* buf, std::size_t n) {
  return ::_read(fd, buf, static_cast<unsigned>(std::min(n, kMaxStep)));
}

ssize_t write_some(int fd, const void* buf, std::size_t n) {
  const int put = ::_write(fd, buf, static_cast<unsigned>(std::min(n, kMaxStep)));
  // A pipe nobody reads any more is EPIPE, as Windows' own C runtime says (Wine's says EINVAL).
  if (put < 0 && (_doserrno == ERROR_NO_DATA || _doserrno == ERROR_BROKEN_PIPE)) errno = EPIPE;
  return put;
}

void wait_writable(int, int) {}

ssize_t pread_some(int fd, void* buf, std::size_t n, std::uint64_t offset) {
  LARGE_INTEGER pointer;
  const HANDLE h = positioned_handle(fd, pointer);
  if (!h) return -1;
  OVERLAPPED o = at_offset(offset);
  DWORD got = 0;
  const BOOL ok = ::ReadFile(h, buf, static_cast<DWORD>(std::min(n, kMaxStep)), &got, &o);
  return positioned_result(h, ok, got, pointer);
}

ssize_t pwrite_some(int fd, const void* buf, std::size_t n, std::uint64_t offset) {
  LARGE_INTEGER pointer;
  const HANDLE h = positioned_handle(fd, pointer);
  if (!h) return -1;
  OVERLAPPED o = at_offset(offset);
  DWORD put = 0;
  const BOOL ok = ::WriteFile(h, buf, static_cast<DWORD>(std::min(n, kMaxStep)), &put, &o);
  return positioned_result(h, ok, put, pointer);
}

ssize_t kernel_copy(int, std::uint64_t, int, std::uint64_t, std::size_t) {
  errno = ENOSYS;
  return -1;
}

int clone_range(int, std::uint64_t, int, std::uint64_t, std::size_t) { return EOPNOTSUPP; }

}  // namespace ferry::posix::os

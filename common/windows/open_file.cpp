// open_file and close_fd on Windows (see open_file.hpp): CreateFileW sharing read, write and
// delete (so a file ferry holds open can still be renamed over, as on POSIX), handed out as a
// binary, non-inherited C runtime descriptor; _close.
#include "common/open_file.hpp"

#include <io.h>

#include <cerrno>

#include "common/windows/win32.hpp"

namespace ferry::posix {
namespace {

// CreateFileW's disposition for open(2)'s O_CREAT, O_EXCL and O_TRUNC.
DWORD disposition_of(int flags) {
  if ((flags & O_CREAT) && (flags & O_EXCL)) return CREATE_NEW;
  if (flags & O_CREAT) return (flags & O_TRUNC) ? CREATE_ALWAYS : OPEN_ALWAYS;
  return (flags & O_TRUNC) ? TRUNCATE_EXISTING : OPEN_EXISTING;
}

}  // namespace

int open_file(const std::filesystem::path& path, int flags, int mode) {
  const DWORD attributes = (mode & 0200) ? FILE_ATTRIBUTE_NORMAL : FILE_ATTRIBUTE_READONLY;
  const HANDLE h = win::create_file(path, flags, disposition_of(flags), attributes);
  if (h == INVALID_HANDLE_VALUE) return -1;
  return win::fd_of(h, flags);
}

int open_file_nofollow(const std::filesystem::path& path, int flags, int mode) {
  // Checked by name first (Wine 8 opens a Unix symlink's target even on the reparse point), then
  // on the handle, which holds the link itself on Windows.
  if (win::path_is_link(path)) {
    errno = ELOOP;
    return -1;
  }
  const DWORD attributes = (mode & 0200) ? FILE_ATTRIBUTE_NORMAL : FILE_ATTRIBUTE_READONLY;
  // O_TRUNC after the check: truncating on open would reach a link's own data first.
  const HANDLE h = win::create_file(path, flags, disposition_of(flags & ~O_TRUNC), attributes | FILE_FLAG_OPEN_REPARSE_POINT);
  if (h == INVALID_HANDLE_VALUE) return -1;
  FileStat st;
  int err = win::stat_handle(h, st);
  if (!err && st.kind == FileKind::symlink) err = ELOOP;
  if (!err && (flags & O_TRUNC) && !::SetEndOfFile(h)) err = win::errno_of(::GetLastError());
  if (err) {
    ::CloseHandle(h);
    errno = err;
    return -1;
  }
  return win::fd_of(h, flags);
}

int close_fd(int fd) noexcept { return ::_close(fd); }

}  // namespace ferry::posix

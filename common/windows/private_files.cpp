// ferry's own files and directories on Windows (see private_files.hpp): made as they come, since
// the user's profile (or project) they lie in is already closed to other users by its inherited
// ACL; a final reparse point is never opened as the file.
#include "common/private_files.hpp"

#include <fcntl.h>

#include <cerrno>

#include "common/windows/win32.hpp"

namespace ferry::posix {
namespace fs = std::filesystem;

std::error_code make_private_dirs(const fs::path& dir) {
  if (dir.empty()) return std::make_error_code(std::errc::invalid_argument);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ec;
  if (!fs::is_directory(dir, ec)) return ec ? ec : std::make_error_code(std::errc::not_a_directory);
  return {};
}

int open_private(const fs::path& path, int flags) {
  // The name checked as its directory lists it (what Wine shows of a link), then the handle
  // opened on the reparse point itself checked again (what Windows shows).
  if (win::path_is_link(path)) {
    errno = ELOOP;
    return -1;
  }
  const DWORD how = (flags & O_EXCL) ? CREATE_NEW : OPEN_ALWAYS;
  const HANDLE h = win::create_file(path, flags, how, FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT);
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

std::error_code make_private(int fd) {
  if (win::handle_of(fd) == INVALID_HANDLE_VALUE) return {EBADF, std::generic_category()};
  return {};
}

}  // namespace ferry::posix

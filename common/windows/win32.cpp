// The Win32 conversions of win32.hpp, shared by the Windows parts of ferry_posix.
#include "common/windows/win32.hpp"

#include <fcntl.h>
#include <io.h>

#include <cerrno>

namespace ferry::posix::win {
namespace {

constexpr std::int64_t kTicksPerNs = 100;                     // one tick is 100 ns
constexpr std::int64_t kUnixEpochTicks = 116444736000000000;  // 1970-01-01 in ticks since 1601

// Which access CreateFileW needs for open(2)'s access mode.
DWORD access_of(int flags) {
  switch (flags & (O_RDONLY | O_WRONLY | O_RDWR)) {
    case O_WRONLY: return GENERIC_WRITE | FILE_READ_ATTRIBUTES;
    case O_RDWR: return GENERIC_READ | GENERIC_WRITE;
    default: return GENERIC_READ;
  }
}

}  // namespace

int errno_of(DWORD error) {
  switch (error) {
    case ERROR_FILE_NOT_FOUND: case ERROR_PATH_NOT_FOUND: case ERROR_INVALID_DRIVE: case ERROR_BAD_NETPATH:
    case ERROR_BAD_PATHNAME: return ENOENT;
    case ERROR_ACCESS_DENIED: case ERROR_SHARING_VIOLATION: case ERROR_LOCK_VIOLATION: return EACCES;
    case ERROR_FILE_EXISTS: case ERROR_ALREADY_EXISTS: return EEXIST;
    case ERROR_DIRECTORY: return ENOTDIR;
    case ERROR_DIR_NOT_EMPTY: return ENOTEMPTY;
    case ERROR_INVALID_HANDLE: return EBADF;
    case ERROR_NOT_ENOUGH_MEMORY: case ERROR_OUTOFMEMORY: return ENOMEM;
    case ERROR_DISK_FULL: case ERROR_HANDLE_DISK_FULL: return ENOSPC;
    case ERROR_BROKEN_PIPE: case ERROR_NO_DATA: return EPIPE;
    case ERROR_INVALID_PARAMETER: return EINVAL;
    case ERROR_NOT_SUPPORTED: case ERROR_INVALID_FUNCTION: return EOPNOTSUPP;
    case ERROR_FILENAME_EXCED_RANGE: return ENAMETOOLONG;
    case ERROR_NO_UNICODE_TRANSLATION: return EILSEQ;
    case ERROR_CANT_RESOLVE_FILENAME: return ELOOP;
    case ERROR_USER_MAPPED_FILE: return EBUSY;
    default: return EIO;
  }
}

int fail_with_last_error() {
  errno = errno_of(::GetLastError());
  return -1;
}

std::int64_t ns_of_ticks(std::int64_t ticks) { return (ticks - kUnixEpochTicks) * kTicksPerNs; }

std::int64_t ticks_of_ns(std::int64_t ns) {
  std::int64_t ticks = ns / kTicksPerNs;
  if (ns % kTicksPerNs < 0) --ticks;  // rounded down also before 1970
  return ticks + kUnixEpochTicks;
}

std::int64_t ticks_of(const FILETIME& ft) {
  return static_cast<std::int64_t>((static_cast<std::uint64_t>(ft.dwHighDateTime) << 32) | ft.dwLowDateTime);
}

std::string utf8_of(std::wstring_view w, bool& valid) {
  valid = true;
  if (w.empty()) return {};
  const int wn = static_cast<int>(w.size());
  int n = ::WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, w.data(), wn, nullptr, 0, nullptr, nullptr);
  const DWORD strict = n > 0 ? WC_ERR_INVALID_CHARS : 0;
  if (n <= 0) {
    valid = false;
    n = ::WideCharToMultiByte(CP_UTF8, 0, w.data(), wn, nullptr, 0, nullptr, nullptr);
  }
  std::string out(static_cast<std::size_t>(n), '\0');
  ::WideCharToMultiByte(CP_UTF8, strict, w.data(), wn, out.data(), n, nullptr, nullptr);
  return out;
}

std::string utf8_of(const std::filesystem::path& p) {
  const std::u8string u = p.u8string();
  return std::string(u.begin(), u.end());
}

bool is_link(DWORD attributes, DWORD reparse_tag) {
  return (attributes & FILE_ATTRIBUTE_REPARSE_POINT) && (reparse_tag == 0 || IsReparseTagNameSurrogate(reparse_tag));
}

FileKind kind_of(DWORD attributes, DWORD reparse_tag) {
  if (is_link(attributes, reparse_tag)) return FileKind::symlink;
  if (attributes & FILE_ATTRIBUTE_DIRECTORY) return FileKind::directory;
  if (attributes & FILE_ATTRIBUTE_DEVICE) return FileKind::other;
  return FileKind::regular;
}

std::uint32_t mode_of(DWORD attributes) {
  if (attributes & FILE_ATTRIBUTE_DIRECTORY) return 0755;
  return (attributes & FILE_ATTRIBUTE_READONLY) ? 0444 : 0644;
}

bool path_is_link(const std::filesystem::path& p) {
  // A search for the name itself reports the entry as its directory lists it: never followed.
  WIN32_FIND_DATAW found;
  const HANDLE h = ::FindFirstFileExW(p.c_str(), FindExInfoBasic, &found, FindExSearchNameMatch, nullptr, 0);
  if (h == INVALID_HANDLE_VALUE) return false;  // missing, or a root (which is no link)
  ::FindClose(h);
  return is_link(found.dwFileAttributes, found.dwReserved0);
}

HANDLE handle_of(int fd) {
  const auto h = reinterpret_cast<HANDLE>(::_get_osfhandle(fd));
  if (h == INVALID_HANDLE_VALUE) errno = EBADF;
  return h;
}

int stat_handle(HANDLE h, FileStat& out) {
  out = {};
  if (::GetFileType(h) != FILE_TYPE_DISK) return 0;  // a pipe or a console: FileKind::other
  BY_HANDLE_FILE_INFORMATION info;
  FILE_BASIC_INFO basic;
  if (!::GetFileInformationByHandle(h, &info) || !::GetFileInformationByHandleEx(h, FileBasicInfo, &basic, sizeof basic))
    return errno_of(::GetLastError());
  FILE_ATTRIBUTE_TAG_INFO tag{};
  if (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
    ::GetFileInformationByHandleEx(h, FileAttributeTagInfo, &tag, sizeof tag);
  out.kind = kind_of(info.dwFileAttributes, tag.ReparseTag);
  out.size = (static_cast<std::uint64_t>(info.nFileSizeHigh) << 32) | info.nFileSizeLow;
  out.mtime_ns = ns_of_ticks(ticks_of(info.ftLastWriteTime));
  out.ctime_ns = ns_of_ticks(basic.ChangeTime.QuadPart);
  out.mode = mode_of(info.dwFileAttributes);
  out.dev = info.dwVolumeSerialNumber;
  out.ino = (static_cast<std::uint64_t>(info.nFileIndexHigh) << 32) | info.nFileIndexLow;
  return 0;
}

HANDLE create_file(const std::filesystem::path& p, int flags, DWORD how, DWORD extra) {
  const HANDLE h = ::CreateFileW(p.c_str(), access_of(flags), FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                                 nullptr, how, extra, nullptr);
  if (h == INVALID_HANDLE_VALUE) fail_with_last_error();
  return h;
}

int open_dir_handle(const std::filesystem::path& p, DWORD extra) {
  const HANDLE h = ::CreateFileW(p.c_str(), FILE_LIST_DIRECTORY | FILE_TRAVERSE | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
                                 FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                                 FILE_FLAG_BACKUP_SEMANTICS | extra, nullptr);
  if (h == INVALID_HANDLE_VALUE) return fail_with_last_error();
  return fd_of(h, O_RDONLY);
}

int fd_of(HANDLE h, int flags) {
  const int fd = ::_open_osfhandle(reinterpret_cast<intptr_t>(h), (flags & O_APPEND) | O_BINARY | O_NOINHERIT);
  if (fd < 0) {
    const int e = errno;
    ::CloseHandle(h);
    errno = e;
  }
  return fd;
}

}  // namespace ferry::posix::win

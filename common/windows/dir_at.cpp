// The calls relative to a directory descriptor on Windows (see dir_at.hpp). A directory descriptor
// is a C runtime descriptor over a directory handle. `name` is opened relative to that handle
// (NtCreateFile's root directory, the one Win32 way to open "this name in that directory" that a
// rename of the directory cannot redirect), on the reparse point itself, and the handle is then
// checked: a link is closed again and refused (ELOOP). Wine 8 opens what a Unix symlink points to
// even then, so the name is also checked as its directory lists it before the open.
#include "common/dir_at.hpp"

#include <winternl.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/windows/win32.hpp"

namespace ferry::posix {
namespace {

// Windows 10 1709's classes and FILE_RENAME_INFO's Flags, which MinGW declares only for an
// _WIN32_WINNT above the 0x0A00 ferry targets (older Windows answers them with an error, and the
// calls below fall back).
constexpr auto kFileDispositionInfoEx = static_cast<FILE_INFO_BY_HANDLE_CLASS>(21);
constexpr auto kFileRenameInfoEx = static_cast<FILE_INFO_BY_HANDLE_CLASS>(22);
constexpr DWORD kRenameReplaceIfExists = 0x1, kRenamePosixSemantics = 0x2;

// NTSTATUS as an errno, through the Win32 error it stands for.
int errno_of_status(NTSTATUS status) { return win::errno_of(::RtlNtStatusToDosError(status)); }

// UTF-8 `rel` as the relative NT name NtCreateFile takes ('\' between components). Empty, with
// errno set, for a name that is not valid UTF-8 or not relative.
std::wstring nt_name_of(std::string_view rel) {
  if (rel.empty() || rel.front() == '/' || rel.front() == '\\' || rel.find(':') != std::string_view::npos) {
    errno = EINVAL;
    return {};
  }
  const int n = ::MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, rel.data(), static_cast<int>(rel.size()), nullptr, 0);
  if (n <= 0) {
    errno = EILSEQ;
    return {};
  }
  std::wstring w(static_cast<std::size_t>(n), L'\0');
  ::MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, rel.data(), static_cast<int>(rel.size()), w.data(), n);
  for (wchar_t& c : w)
    if (c == L'/') c = L'\\';
  return w;
}

// The path of the directory behind `dirfd`, for the check by name (Wine) only.
std::filesystem::path path_of(HANDLE dir) {
  std::wstring buf(512, L'\0');
  DWORD n = ::GetFinalPathNameByHandleW(dir, buf.data(), static_cast<DWORD>(buf.size()), FILE_NAME_NORMALIZED);
  if (n >= buf.size()) {
    buf.resize(n + 1);
    n = ::GetFinalPathNameByHandleW(dir, buf.data(), static_cast<DWORD>(buf.size()), FILE_NAME_NORMALIZED);
  }
  buf.resize(n < buf.size() ? n : 0);
  return std::filesystem::path(buf);
}

struct Relative {
  ACCESS_MASK access;
  ULONG disposition;  // FILE_OPEN, FILE_CREATE, FILE_OPEN_IF
  ULONG options;      // FILE_DIRECTORY_FILE, FILE_NON_DIRECTORY_FILE or 0
  ULONG attributes = FILE_ATTRIBUTE_NORMAL;
};

// `rel` under `dirfd`, opened on itself (never through a final link): the handle, or
// INVALID_HANDLE_VALUE with errno set (ELOOP for a link).
HANDLE open_relative(int dirfd, std::string_view rel, const Relative& how) {
  const HANDLE dir = win::handle_of(dirfd);
  if (dir == INVALID_HANDLE_VALUE) return dir;
  const std::wstring name = nt_name_of(rel);
  if (name.empty()) return INVALID_HANDLE_VALUE;
  // A name that must not exist yet is never followed: only the others are checked by name.
  if (how.disposition != FILE_CREATE && win::path_is_link(path_of(dir) / name)) {
    errno = ELOOP;
    return INVALID_HANDLE_VALUE;
  }
  UNICODE_STRING us;
  us.Buffer = const_cast<PWSTR>(name.c_str());
  us.Length = us.MaximumLength = static_cast<USHORT>(name.size() * sizeof(wchar_t));
  OBJECT_ATTRIBUTES oa;
  InitializeObjectAttributes(&oa, &us, OBJ_CASE_INSENSITIVE, dir, nullptr);
  IO_STATUS_BLOCK io{};
  HANDLE h = INVALID_HANDLE_VALUE;
  const NTSTATUS status =
      ::NtCreateFile(&h, how.access | SYNCHRONIZE | FILE_READ_ATTRIBUTES, &oa, &io, nullptr, how.attributes,
                     FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, how.disposition,
                     how.options | FILE_SYNCHRONOUS_IO_NONALERT | FILE_OPEN_REPARSE_POINT | FILE_OPEN_FOR_BACKUP_INTENT,
                     nullptr, 0);
  if (status < 0) {
    errno = errno_of_status(status);
    return INVALID_HANDLE_VALUE;
  }
  FileStat st;
  if (const int err = win::stat_handle(h, st); err || st.kind == FileKind::symlink) {
    ::CloseHandle(h);
    errno = err ? err : ELOOP;
    return INVALID_HANDLE_VALUE;
  }
  return h;
}

ACCESS_MASK access_of(int flags) {
  switch (flags & (O_RDONLY | O_WRONLY | O_RDWR)) {
    case O_WRONLY: return GENERIC_WRITE;
    case O_RDWR: return GENERIC_READ | GENERIC_WRITE;
    default: return GENERIC_READ;
  }
}

ULONG disposition_of(int flags) {
  if ((flags & O_CREAT) && (flags & O_EXCL)) return FILE_CREATE;
  return (flags & O_CREAT) ? FILE_OPEN_IF : FILE_OPEN;
}

}  // namespace

UniqueFd open_dir_nofollow(int at, const std::string& rel) {
  if (rel.empty()) return UniqueFd(win::open_dir_handle(path_of(win::handle_of(at)), 0));
  const Relative how{FILE_LIST_DIRECTORY | FILE_TRAVERSE, FILE_OPEN, FILE_DIRECTORY_FILE};
  const HANDLE h = open_relative(at, rel, how);
  return UniqueFd(h == INVALID_HANDLE_VALUE ? -1 : win::fd_of(h, O_RDONLY));
}

UniqueFd open_dir_path(const std::filesystem::path& path) {
  return UniqueFd(win::open_dir_handle(path, 0));
}

int open_at(int dirfd, const std::string& rel, int flags, int mode) {
  // O_TRUNC is done after the check, on the file the handle holds: overwriting on open would reach
  // a link's own data before it could be refused.
  Relative how{access_of(flags), disposition_of(flags), FILE_NON_DIRECTORY_FILE};
  if (!(mode & 0200)) how.attributes = FILE_ATTRIBUTE_READONLY;
  const HANDLE h = open_relative(dirfd, rel, how);
  if (h == INVALID_HANDLE_VALUE) return -1;
  if ((flags & O_TRUNC) && !::SetEndOfFile(h)) {
    const int err = win::errno_of(::GetLastError());
    ::CloseHandle(h);
    errno = err;
    return -1;
  }
  return win::fd_of(h, flags);
}

int stat_nofollow(int dirfd, const char* name, FileStat& st) {
  st = {};
  const HANDLE dir = win::handle_of(dirfd);
  if (dir == INVALID_HANDLE_VALUE) return EBADF;
  const std::wstring wide = nt_name_of(name);
  if (wide.empty()) return errno;
  // As its directory lists it: a link is reported as itself, never followed.
  const std::filesystem::path p = path_of(dir) / wide;
  WIN32_FIND_DATAW found;
  const HANDLE f = ::FindFirstFileExW(p.c_str(), FindExInfoBasic, &found, FindExSearchNameMatch, nullptr, 0);
  if (f == INVALID_HANDLE_VALUE) return win::errno_of(::GetLastError());
  ::FindClose(f);
  if (win::is_link(found.dwFileAttributes, found.dwReserved0)) {
    st.kind = FileKind::symlink;
    st.mtime_ns = win::ns_of_ticks(win::ticks_of(found.ftLastWriteTime));
    st.mode = 0777;
    return 0;
  }
  // The rest (file id, change time, volume) from the entry itself.
  const Relative how{FILE_READ_ATTRIBUTES, FILE_OPEN, 0};
  const HANDLE h = open_relative(dirfd, name, how);
  if (h == INVALID_HANDLE_VALUE) return errno;
  const int err = win::stat_handle(h, st);
  ::CloseHandle(h);
  return err;
}

std::optional<std::string> read_link_at(int, const char*, std::size_t) { return std::nullopt; }

int mkdir_at(int dirfd, const char* name, int) {
  const Relative how{FILE_LIST_DIRECTORY, FILE_CREATE, FILE_DIRECTORY_FILE};
  const HANDLE h = open_relative(dirfd, name, how);
  if (h == INVALID_HANDLE_VALUE) return -1;
  ::CloseHandle(h);
  return 0;
}

int unlink_at(int dirfd, const char* name) {
  const Relative how{DELETE, FILE_OPEN, FILE_NON_DIRECTORY_FILE};
  const HANDLE h = open_relative(dirfd, name, how);
  if (h == INVALID_HANDLE_VALUE) return errno == ELOOP ? (errno = EPERM, -1) : -1;
  // POSIX semantics where the volume has them (the name goes now, though others hold it open);
  // otherwise the name goes when the last handle does.
  FILE_DISPOSITION_INFO_EX ex{FILE_DISPOSITION_FLAG_DELETE | FILE_DISPOSITION_FLAG_POSIX_SEMANTICS};
  FILE_DISPOSITION_INFO plain{TRUE};
  const bool ok = ::SetFileInformationByHandle(h, kFileDispositionInfoEx, &ex, sizeof ex) ||
                  ::SetFileInformationByHandle(h, FileDispositionInfo, &plain, sizeof plain);
  const DWORD error = ::GetLastError();
  ::CloseHandle(h);
  if (ok) return 0;
  errno = win::errno_of(error);
  return -1;
}

namespace {

// SetFileInformationByHandle(FileRenameInfo[Ex]) of `h` to `name`, relative to `root` (or absolute
// with no root): the Win32 error, 0 for done.
DWORD rename_handle(HANDLE h, HANDLE root, const std::wstring& name, bool posix_semantics) {
  // FILE_RENAME_INFO ends in the name: one buffer holds both.
  std::vector<char> buf(sizeof(FILE_RENAME_INFO) + name.size() * sizeof(wchar_t));
  auto* info = reinterpret_cast<FILE_RENAME_INFO*>(buf.data());
  if (posix_semantics) {
    const DWORD flags = kRenameReplaceIfExists | kRenamePosixSemantics;  // the union over ReplaceIfExists
    std::memcpy(buf.data(), &flags, sizeof flags);
  } else {
    info->ReplaceIfExists = TRUE;
  }
  info->RootDirectory = root;
  info->FileNameLength = static_cast<DWORD>(name.size() * sizeof(wchar_t));
  std::memcpy(info->FileName, name.data(), info->FileNameLength);
  const auto cls = posix_semantics ? kFileRenameInfoEx : FileRenameInfo;
  return ::SetFileInformationByHandle(h, cls, info, static_cast<DWORD>(buf.size())) ? 0 : ::GetLastError();
}

}  // namespace

int rename_at(int from_dir, const char* from, int to_dir, const char* to) {
  const HANDLE target_dir = win::handle_of(to_dir);
  if (target_dir == INVALID_HANDLE_VALUE) return -1;
  const std::wstring to_name = nt_name_of(to);
  if (to_name.empty()) return -1;
  const Relative how{DELETE, FILE_OPEN, 0};
  const HANDLE h = open_relative(from_dir, from, how);
  if (h == INVALID_HANDLE_VALUE) return -1;
  // POSIX semantics first (Windows 10 1709: a file others hold open is replaced too), then the
  // classic rename; both relative to the target's handle. Wine 8 takes neither with a root
  // directory (ERROR_INVALID_PARAMETER): there the target is named by its directory's path.
  DWORD error = rename_handle(h, target_dir, to_name, true);
  if (error) error = rename_handle(h, target_dir, to_name, false);
  if (error == ERROR_INVALID_PARAMETER) error = rename_handle(h, nullptr, (path_of(target_dir) / to_name).native(), false);
  ::CloseHandle(h);
  if (!error) return 0;
  errno = win::errno_of(error);
  return -1;
}

int symlink_at(const std::string&, int, const char*) {
  errno = EPERM;
  return -1;
}

int sync_fd(int fd) {
  const HANDLE h = win::handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return -1;
  FileStat st;
  if (win::stat_handle(h, st) == 0 && st.kind == FileKind::directory) return 0;  // nothing to flush there
  return ::FlushFileBuffers(h) ? 0 : win::fail_with_last_error();
}

int truncate_fd(int fd, std::uint64_t size) {
  const HANDLE h = win::handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return -1;
  FILE_END_OF_FILE_INFO eof;
  eof.EndOfFile.QuadPart = static_cast<LONGLONG>(size);
  return ::SetFileInformationByHandle(h, FileEndOfFileInfo, &eof, sizeof eof) ? 0 : win::fail_with_last_error();
}

int chmod_fd(int fd, std::uint32_t mode) {
  const HANDLE h = win::handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return -1;
  FILE_BASIC_INFO basic;
  if (!::GetFileInformationByHandleEx(h, FileBasicInfo, &basic, sizeof basic)) return win::fail_with_last_error();
  const DWORD before = basic.FileAttributes;
  if (mode & 0200) basic.FileAttributes &= ~static_cast<DWORD>(FILE_ATTRIBUTE_READONLY);
  else basic.FileAttributes |= FILE_ATTRIBUTE_READONLY;
  if (basic.FileAttributes == before) return 0;
  if (basic.FileAttributes == 0) basic.FileAttributes = FILE_ATTRIBUTE_NORMAL;
  // Zero times: leave them as they are.
  basic.CreationTime.QuadPart = basic.LastAccessTime.QuadPart = basic.LastWriteTime.QuadPart = basic.ChangeTime.QuadPart = 0;
  return ::SetFileInformationByHandle(h, FileBasicInfo, &basic, sizeof basic) ? 0 : win::fail_with_last_error();
}

}  // namespace ferry::posix

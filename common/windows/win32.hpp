// Windows only, internal to common/windows/: the few conversions every Win32 part of ferry_posix
// needs: Win32 errors as errno values, FILETIME ticks as Unix nanoseconds, UTF-16 names as UTF-8,
// a handle's information as a FileStat, which reparse points count as links, and files opened
// through CreateFileW (every share mode, so others may rename or delete them as on POSIX) but
// handed out as C runtime descriptors.
#pragma once

#include <windows.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/file_times.hpp"

namespace ferry::posix::win {

// The errno POSIX gives for what `error` (a GetLastError value) says; EIO for the rest.
int errno_of(DWORD error);
// errno set from GetLastError(); returns -1 for the callers' convenience.
int fail_with_last_error();

// FILETIME ticks (100 ns since 1601) and nanoseconds since 1970, both ways; ticks_of rounds down.
std::int64_t ns_of_ticks(std::int64_t ticks);
std::int64_t ticks_of_ns(std::int64_t ns);
std::int64_t ticks_of(const FILETIME& ft);

// UTF-16 to UTF-8; false in `valid` when `w` is not valid UTF-16 (an unpaired surrogate, which
// NTFS allows in names): the text then holds U+FFFD in its place.
std::string utf8_of(std::wstring_view w, bool& valid);
// A path as UTF-8 text, for messages.
std::string utf8_of(const std::filesystem::path& p);

// A reparse point stands for a link when its tag is a name surrogate (symbolic link, junction, WSL
// link) or unknown (0: Wine reports none); other tags (cloud placeholders, deduplicated files) are
// the file or directory itself.
bool is_link(DWORD attributes, DWORD reparse_tag);
FileKind kind_of(DWORD attributes, DWORD reparse_tag);
// The POSIX-looking permission bits file_times.hpp promises for these attributes.
std::uint32_t mode_of(DWORD attributes);
// Whether the last component of `p` is a link, asked without following it.
bool path_is_link(const std::filesystem::path& p);

// The handle behind a C runtime descriptor, or INVALID_HANDLE_VALUE with errno EBADF.
HANDLE handle_of(int fd);
// The handle's file as a FileStat: 0, or the errno.
int stat_handle(HANDLE h, FileStat& out);

// CreateFileW for the access of open(2)'s `flags`, sharing everything; `how`: the disposition;
// `extra`: FILE_FLAG_* and attribute bits. INVALID_HANDLE_VALUE with errno set on failure.
HANDLE create_file(const std::filesystem::path& p, int flags, DWORD how, DWORD extra);
// The directory at `p` as a C runtime descriptor (listable, and a root for relative opens);
// `extra`: FILE_FLAG_OPEN_REPARSE_POINT not to follow a final link. -1 with errno set on failure.
int open_dir_handle(const std::filesystem::path& p, DWORD extra);
// The C runtime descriptor that owns `h` from now on (binary, O_APPEND kept), or -1 with errno set
// (the handle is then closed).
int fd_of(HANDLE h, int flags);

}  // namespace ferry::posix::win

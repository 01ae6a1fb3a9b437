// The calls relative to an open directory descriptor, on every platform: what lets the helper's
// scanner and pull (and the agent's tree listing) walk and write a tree one component at a time,
// never through a link that appeared in it, so nothing outside the root is read or written. POSIX:
// openat, fstatat, mkdirat, renameat, unlinkat with no following. Windows: the descriptor wraps a
// directory handle, and each call opens `name` relative to it (NtCreateFile with a root directory
// and FILE_OPEN_REPARSE_POINT), renames through FILE_RENAME_INFO's root directory and deletes
// through the open handle. Names are UTF-8, '/'-separated; errors are errno values on both.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>

#include "common/dir_reader.hpp"
#include "common/file_times.hpp"
#include "common/unique_fd.hpp"

namespace ferry::posix {

// Opens directory `rel` under `at` without following a link in its last component (an empty `rel`
// opens `at` itself anew). Invalid with errno set on failure (ELOOP or ENOTDIR for a link).
UniqueFd open_dir_nofollow(int at, const std::string& rel);
// Opens the directory at `path` (absolute, or relative to the working directory) as a directory
// descriptor, following links as any path does: the root a walk starts from.
UniqueFd open_dir_path(const std::filesystem::path& path);

// Opens `rel` under `dirfd` as a file, never following a link in its last component (ELOOP).
// `flags`: O_RDONLY/O_WRONLY/O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_APPEND; close-on-exec (and, on
// Windows, binary mode) always. `mode` for a created file (Windows: only its owner-write bit).
// The descriptor, or -1 with errno set.
int open_at(int dirfd, const std::string& rel, int flags, int mode = 0666);

// fstatat(AT_SYMLINK_NOFOLLOW): 0, or the errno (st is then zero).
int stat_nofollow(int dirfd, const char* name, FileStat& st);

// The target of the symlink `name` under `dirfd`, whose stat said `st_size` bytes; nothing if it
// cannot be read or changed length since (the caller's stat is then stale). Windows: nothing
// (a link there has no POSIX target to give the box).
std::optional<std::string> read_link_at(int dirfd, const char* name, std::size_t st_size);

// mkdirat, unlinkat (a file or a link, never what it points to), renameat (replacing a file at
// `to`), symlinkat: 0, or -1 with errno set. Windows makes no links (EPERM: they need developer
// mode or an administrator there) and removes none (EPERM: Wine would remove the target instead);
// a file another program holds open is replaced only where the volume has POSIX semantics
// (NTFS on Windows 10 1709 and later), elsewhere the rename fails with EACCES.
int mkdir_at(int dirfd, const char* name, int mode);
int unlink_at(int dirfd, const char* name);
int rename_at(int from_dir, const char* from, int to_dir, const char* to);
int symlink_at(const std::string& target, int dirfd, const char* name);

// fsync(2) (Windows: FlushFileBuffers); on a directory, what POSIX needs for a rename in it to
// last (Windows needs nothing there: 0). ftruncate(2) and fchmod(2) (Windows: the read-only
// attribute from the owner-write bit). 0, or -1 with errno set.
int sync_fd(int fd);
int truncate_fd(int fd, std::uint64_t size);
int chmod_fd(int fd, std::uint32_t mode);

// A reader of an open directory descriptor; the errno on failure (the fd is closed).
std::expected<DirReader, int> adopt_dir(UniqueFd dir);
// open_dir_nofollow + adopt_dir: the errno of whichever failed.
std::expected<DirReader, int> open_dir_at(int at, const std::string& rel);
// The reader's directory descriptor (for the *_at calls on its entries).
int dir_fd(const DirReader& reader);

}  // namespace ferry::posix

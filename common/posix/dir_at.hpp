// POSIX only: the directory calls relative to an open directory descriptor (openat, fstatat and
// readlinkat with no following), which the helper's scanner and the agent's tree listing walk with,
// and the DirReader (common/dir_reader.hpp) made from or asked for such a descriptor.
#pragma once

#include <expected>
#include <optional>
#include <string>

#include "common/dir_reader.hpp"
#include "common/file_times.hpp"
#include "common/unique_fd.hpp"

namespace ferry::posix {

// Opens directory `rel` under `at` without following a symlink in its last component (an
// empty `rel` opens `at` itself anew). Invalid with errno set on failure.
UniqueFd open_dir_nofollow(int at, const std::string& rel);

// fstatat(AT_SYMLINK_NOFOLLOW): 0, or the errno (st is then zero).
int stat_nofollow(int dirfd, const char* name, FileStat& st);

// The target of the symlink `name` under `dirfd`, whose lstat said `st_size` bytes; nothing
// if it cannot be read or changed length since (the caller's stat is then stale).
std::optional<std::string> read_link_at(int dirfd, const char* name, std::size_t st_size);

// A reader of an open directory descriptor; the errno of fdopendir on failure (the fd is closed).
std::expected<DirReader, int> adopt_dir(UniqueFd dir);
// open_dir_nofollow + adopt_dir: the errno of whichever failed.
std::expected<DirReader, int> open_dir_at(int at, const std::string& rel);
// The reader's directory descriptor (for the *_at calls on its entries).
int dir_fd(const DirReader& reader);

}  // namespace ferry::posix

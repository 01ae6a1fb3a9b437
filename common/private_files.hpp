// Files and directories only their owner may read: what ferry keeps for itself (the agent's state,
// logs and install dir on the box, a project's .ferry/ here) is 0600/0700 whatever the umask,
// and an older ferry's 0644/0755 is narrowed when ferry comes back to it. Never for the user's
// own files (a mapping's synced tree keeps its modes).
//
// On Windows there are no modes to narrow: what ferry keeps lies in the user's profile (or the
// project), whose inherited ACL already keeps other users out, so directories and files are made
// as they come and make_private changes nothing. A final reparse point is still never followed.
#pragma once

#include <fcntl.h>

#include <filesystem>
#include <system_error>

namespace ferry::posix {

// `dir` and its missing parents, each made 0700 (mkdir's mode narrowed by no umask: set exactly
// after); `dir` itself made 0700 when it was already there wider. Ancestors that existed are left
// alone: they may be the user's (~, ~/.cache). A `dir` that is a symlink (a cache moved to another
// disk) is followed; what another user owns is left as it is.
std::error_code make_private_dirs(const std::filesystem::path& dir);

// open(2) with O_CREAT and mode 0600, the file then made exactly 0600 when it is not (an older
// ferry's 0644, an odd umask) through the descriptor; never follows a final symlink (ELOOP).
// `flags`: O_RDONLY/O_WRONLY/O_RDWR, O_TRUNC, O_APPEND, O_EXCL (close-on-exec and, on Windows,
// binary mode are always set). The fd, or -1 with errno set.
int open_private(const std::filesystem::path& path, int flags);

// The file or directory behind `fd` made 0600 (files) or 0700 (directories) if it is wider or
// narrower; for what ferry created itself and opens again.
std::error_code make_private(int fd);

}  // namespace ferry::posix

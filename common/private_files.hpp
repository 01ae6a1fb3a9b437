// Files and directories only their owner may read: what ferry keeps for itself (the agent's state,
// logs and install dir on the box, a project's .ferry/ here) is 0600/0700 whatever the umask,
// and an older ferry's 0644/0755 is narrowed when ferry comes back to it. Never for the user's
// own files (a mapping's synced tree keeps its modes).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <system_error>

namespace ferry::posix {

inline constexpr mode_t kPrivateDirMode = 0700;
inline constexpr mode_t kPrivateFileMode = 0600;

// `dir` and its missing parents, each made 0700 (mkdir's mode narrowed by no umask: set exactly
// after); `dir` itself made 0700 when it was already there wider. Ancestors that existed are left
// alone: they may be the user's (~, ~/.cache). A `dir` that is a symlink (a cache moved to another
// disk) is followed; what another user owns is left as it is.
std::error_code make_private_dirs(const std::filesystem::path& dir);

// open(2) with O_CREAT and mode 0600, the file then made exactly 0600 when it is not (an older
// ferry's 0644, an odd umask) through the descriptor; never follows a final symlink. The fd, or -1
// with errno set.
int open_private(const std::filesystem::path& path, int flags);
int open_private_at(int dir_fd, const char* name, int flags);

// The file or directory behind `fd` made 0600 (files) or 0700 (directories) if it is wider or
// narrower; for what ferry created itself and opens again.
std::error_code make_private(int fd);

}  // namespace ferry::posix

// POSIX only (Windows will start children through Boost.Process): starting a child the way
// ferry's helper starts all of them: in a process group of its own (the terminal's Ctrl-C is
// ferry's to interpret, and a timeout can end the whole group) and with SIGPIPE back to its
// default (the helper ignores it).
#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace ferry::posix {

// posix_spawn of argv (posix_spawnp, searching PATH, when `search_path`) with `actions` (may be
// null). The child's pid; otherwise -1 and `error` holds the errno.
pid_t spawn_in_own_group(const std::vector<std::string>& argv, const posix_spawn_file_actions_t* actions, bool search_path,
                         int& error);

}  // namespace ferry::posix

// POSIX only: open_private (common/private_files.hpp) for a name under an open directory
// descriptor (or AT_FDCWD), as the agent opens its logs.
#pragma once

namespace ferry::posix {

int open_private_at(int dir_fd, const char* name, int flags);

}  // namespace ferry::posix

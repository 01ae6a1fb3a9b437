// open_file and close_fd on POSIX (see open_file.hpp): open(2) with O_CLOEXEC, close(2).
#include "common/open_file.hpp"

#include <unistd.h>

namespace ferry::posix {

int open_file(const std::filesystem::path& path, int flags, int mode) {
  return ::open(path.c_str(), flags | O_CLOEXEC, static_cast<mode_t>(mode));
}

int open_file_nofollow(const std::filesystem::path& path, int flags, int mode) {
  return ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
}

int close_fd(int fd) noexcept { return ::close(fd); }

}  // namespace ferry::posix

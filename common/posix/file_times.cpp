// stat_fd and set_mtime_fd on POSIX (see file_times.hpp): fstat(2) and futimens(2).
#include "common/file_times.hpp"

#include <sys/stat.h>

#include <cerrno>

#include "common/posix/stat_times.hpp"

namespace ferry::posix {

int stat_fd(int fd, FileStat& out) {
  struct stat st {};
  out = {};
  if (::fstat(fd, &st) != 0) return errno;
  out = file_stat_of(st);
  return 0;
}

int set_mtime_fd(int fd, std::int64_t mtime_ns) {
  const timespec times[2] = {{0, UTIME_OMIT}, to_timespec(mtime_ns)};
  return ::futimens(fd, times) == 0 ? 0 : errno;
}

}  // namespace ferry::posix

// try_lock_exclusive on POSIX (see file_lock.hpp): flock(2), retried on EINTR.
#include "common/file_lock.hpp"

#include <sys/file.h>

#include <cerrno>

namespace ferry::posix {

int try_lock_exclusive(int fd) {
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EINTR) return errno == EAGAIN ? EWOULDBLOCK : errno;
  }
  return 0;
}

}  // namespace ferry::posix

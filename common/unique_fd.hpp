// UniqueFd: the one owner of a file descriptor (move-only, closed exactly once). On Windows the
// descriptors are the C runtime's (_open, _close), which ferry's own files use there too.
#pragma once

#include <cerrno>
#include <utility>

#include "common/open_file.hpp"

namespace ferry::posix {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  // Gives the descriptor up without closing it.
  int release() noexcept { return std::exchange(fd_, -1); }
  // Closes the held descriptor (errno kept: callers often report the failure that led here)
  // and takes `fd`.
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0 && fd_ != fd) {
      const int saved = errno;
      close_fd(fd_);
      errno = saved;
    }
    fd_ = fd;
  }
  // Closes now and returns close(2)'s result, for writers that must know the data reached the
  // file system (a deferred NFS error shows up only here).
  int close() noexcept { return fd_ >= 0 ? close_fd(std::exchange(fd_, -1)) : 0; }

 private:
  int fd_ = -1;
};

}  // namespace ferry::posix

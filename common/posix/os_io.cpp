// The single system calls of platform_io.hpp on POSIX: read/write, pread/pwrite, Linux's
// copy_file_range(2) and FICLONERANGE.
#include "common/platform_io.hpp"

#include <linux/fs.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>

namespace ferry::posix::os {

ssize_t read_some(int fd, void* buf, std::size_t n) { return ::read(fd, buf, n); }

ssize_t write_some(int fd, const void* buf, std::size_t n) { return ::write(fd, buf, n); }

void wait_writable(int fd, int ms) {
  pollfd p{fd, POLLOUT, 0};
  ::poll(&p, 1, ms);
}

ssize_t pread_some(int fd, void* buf, std::size_t n, std::uint64_t offset) {
  return ::pread(fd, buf, n, static_cast<off_t>(offset));
}

ssize_t pwrite_some(int fd, const void* buf, std::size_t n, std::uint64_t offset) {
  return ::pwrite(fd, buf, n, static_cast<off_t>(offset));
}

ssize_t kernel_copy(int in_fd, std::uint64_t in_off, int out_fd, std::uint64_t out_off, std::size_t n) {
  auto in = static_cast<off64_t>(in_off), out = static_cast<off64_t>(out_off);
  return ::copy_file_range(in_fd, &in, out_fd, &out, n, 0);
}

int clone_range(int in_fd, std::uint64_t in_off, int out_fd, std::uint64_t out_off, std::size_t n) {
  file_clone_range arg{};
  arg.src_fd = in_fd;
  arg.src_offset = in_off;
  arg.src_length = n;
  arg.dest_offset = out_off;
  return ::ioctl(out_fd, FICLONERANGE, &arg) == 0 ? 0 : errno;
}

}  // namespace ferry::posix::os

// The platform seam under full_io.cpp and copy_range.cpp: the single system calls they loop over,
// implemented once per platform (common/posix/os_io.cpp, common/windows/os_io.cpp). Internal to
// ferry_posix: callers use full_io.hpp and copy_range.hpp.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace ferry::posix::os {

// One read(2)/write(2)/pread(2)/pwrite(2): the count moved (possibly short), or -1 with errno
// set (EINTR included: the callers retry it). pread/pwrite leave the descriptor's offset as it was
// and fail with ESPIPE on a pipe.
ssize_t read_some(int fd, void* buf, std::size_t n);
ssize_t write_some(int fd, const void* buf, std::size_t n);
ssize_t pread_some(int fd, void* buf, std::size_t n, std::uint64_t offset);
ssize_t pwrite_some(int fd, const void* buf, std::size_t n, std::uint64_t offset);

// Waits up to `ms` for `fd` to take a write (poll(2) on POSIX; Windows descriptors never say
// EAGAIN, so there it returns at once).
void wait_writable(int fd, int ms);

// copy_file_range(2) between explicit offsets: bytes copied, or -1 with errno set (ENOSYS where
// the platform has no kernel copy).
ssize_t kernel_copy(int in_fd, std::uint64_t in_off, int out_fd, std::uint64_t out_off, std::size_t n);

// FICLONERANGE (out shares in's extents): 0, or the errno (EOPNOTSUPP where there is none).
int clone_range(int in_fd, std::uint64_t in_off, int out_fd, std::uint64_t out_off, std::size_t n);

}  // namespace ferry::posix::os

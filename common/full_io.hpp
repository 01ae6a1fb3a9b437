// Whole reads and writes: read(2)/write(2) and their positioned forms may stop early (a signal,
// a pipe, a network file system); these loop until the count is done, retrying EINTR.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace ferry::posix {

// Each returns `n` (reads: fewer only when end of file came first) or -1 with errno set
// (EAGAIN on a non-blocking descriptor included; the bytes already moved are then lost to the
// caller, so use these on blocking descriptors).
ssize_t read_full(int fd, void* buf, std::size_t n);
ssize_t write_full(int fd, const void* buf, std::size_t n);
ssize_t pread_full(int fd, void* buf, std::size_t n, std::uint64_t offset);
ssize_t pwrite_full(int fd, const void* buf, std::size_t n, std::uint64_t offset);

// write_full for a standard stream that another program may have left non-blocking (a terminal
// shared with it): EAGAIN is waited out instead of losing bytes. -1 with errno set otherwise
// (EPIPE: the reader went away).
ssize_t write_stream(int fd, const void* buf, std::size_t n);

// Appends what `fd` holds from its current offset to the end (at most `limit` bytes; a longer
// file is cut there) to `out`. False with errno set on a read error.
bool read_to_end(int fd, std::string& out, std::size_t limit = static_cast<std::size_t>(-1));

}  // namespace ferry::posix

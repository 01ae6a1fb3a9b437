// Whole reads and writes (see full_io.hpp): loops over the platform's single calls (platform_io.hpp).
#include "common/full_io.hpp"

#include <algorithm>
#include <cerrno>

#include "common/platform_io.hpp"

namespace ferry::posix {
namespace {

// One loop for the four calls: `step(done)` moves bytes from position `done` on.
template <bool kWrite, class Step>
ssize_t loop(std::size_t n, Step step) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t k = step(done);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (k == 0) {
      if (!kWrite) break;  // end of file
      errno = EIO;         // a write that moves nothing would loop forever
      return -1;
    }
    done += static_cast<std::size_t>(k);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace

ssize_t read_full(int fd, void* buf, std::size_t n) {
  auto* p = static_cast<char*>(buf);
  return loop<false>(n, [&](std::size_t done) { return os::read_some(fd, p + done, n - done); });
}

ssize_t write_full(int fd, const void* buf, std::size_t n) {
  const auto* p = static_cast<const char*>(buf);
  return loop<true>(n, [&](std::size_t done) { return os::write_some(fd, p + done, n - done); });
}

ssize_t write_stream(int fd, const void* buf, std::size_t n) {
  const auto* p = static_cast<const char*>(buf);
  return loop<true>(n, [&](std::size_t done) {
    for (;;) {
      const ssize_t k = os::write_some(fd, p + done, n - done);
      if (k >= 0 || errno != EAGAIN) return k;
      os::wait_writable(fd, 1000);
    }
  });
}

ssize_t pread_full(int fd, void* buf, std::size_t n, std::uint64_t offset) {
  auto* p = static_cast<char*>(buf);
  return loop<false>(n, [&](std::size_t done) { return os::pread_some(fd, p + done, n - done, offset + done); });
}

ssize_t pwrite_full(int fd, const void* buf, std::size_t n, std::uint64_t offset) {
  const auto* p = static_cast<const char*>(buf);
  return loop<true>(n, [&](std::size_t done) { return os::pwrite_some(fd, p + done, n - done, offset + done); });
}

bool read_to_end(int fd, std::string& out, std::size_t limit) {
  char buf[65536];
  for (std::size_t got = 0; got < limit;) {
    const ssize_t n = os::read_some(fd, buf, std::min(sizeof buf, limit - got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    got += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace ferry::posix

// Memory every tool of a benchmark starts with: a virtual machine backs a guest page only when it is
// first touched, and on this project's VMs that costs 3-7 s per GiB once the guest goes past what
// it touched before (`dd` into /dev/shm: 0.4-0.5 s for the first GiBs, then 3.4-7.1 s a GiB),
// against ~0.4 s on memory it backs already. Freed pages stay backed, so without this whichever
// tool first takes memory past the high-water mark pays for it, and the next one, writing into
// the pages the first one's output freed, does not. Writing and removing a file of the size a
// transfer will need just before it puts every tool on backed memory, as on a physical machine.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace ferry::bench {

// Writes `bytes` of zeros into a file under `dir` (the file system the transfer writes to), then
// removes it. Returns the seconds it took: far above 0.5 s per GiB means the VM backed new pages.
inline double warm_memory(const std::filesystem::path& dir, std::uint64_t bytes) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::filesystem::path p = dir / ".bench-warm-memory";
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("warm_memory: cannot create " + p.string());
  const std::vector<char> zeros(8u << 20, '\0');
  bool ok = true;
  for (std::uint64_t done = 0; ok && done < bytes;) {
    const ssize_t n = ::write(fd, zeros.data(), static_cast<std::size_t>(std::min<std::uint64_t>(zeros.size(), bytes - done)));
    ok = n > 0;
    done += ok ? static_cast<std::uint64_t>(n) : 0;
  }
  ::close(fd);
  std::filesystem::remove(p);
  if (!ok) throw std::runtime_error("warm_memory: cannot write " + p.string());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace ferry::bench

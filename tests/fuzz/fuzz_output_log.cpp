// Fuzzes the output.log reader (remote-runtime/agent/run/output_log): whatever bytes the file
// holds (a torn or tampered log), paging must stay in bounds and agree with the offset check:
// every record start it returns is a valid boundary, nothing in between is, and the pages tile
// the file up to the last complete record.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "remote-runtime/agent/run/output_log.hpp"

using namespace ferry::agent::run;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > (1u << 20)) return 0;
  // The first byte picks the page size, the rest is the file.
  const std::size_t page = 1 + data[0] * 97;
  int fd = ::memfd_create("output.log", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (::write(fd, data + 1, size - 1) != static_cast<ssize_t>(size - 1)) {
    ::close(fd);
    return 0;
  }
  std::uint64_t at = 0;
  while (true) {
    auto chunk = read_records(fd, at, page);
    if (!chunk) break;  // corrupt header: reported, never read past
    if (chunk->records.empty()) {
      if (chunk->next != at) std::abort();
      break;
    }
    for (const auto& r : chunk->records) {
      if (r.offset != at || (r.stream != kStdout && r.stream != kStderr) || r.data.size() > kMaxRecordData) std::abort();
      if (!check_offset(fd, at)) std::abort();
      if (check_offset(fd, at + 1)) std::abort();  // records are at least 5 bytes long
      at += kRecordHeaderBytes + r.data.size();
      if (at > size - 1) std::abort();
    }
    if (chunk->next != at) std::abort();
  }
  ::close(fd);
  return 0;
}

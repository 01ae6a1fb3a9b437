// output.log records: see output_log.hpp.
#include "remote-runtime/agent/run/output_log.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <optional>

#include "common/full_io.hpp"

namespace ferry::agent::run {
namespace {

// All `n` bytes at `offset`: the callers checked the file's size, so a short read is an error.
bool pread_all(int fd, char* out, std::size_t n, std::uint64_t offset) {
  const ssize_t got = ferry::posix::pread_full(fd, out, n, offset);
  if (got >= 0 && static_cast<std::size_t>(got) < n) errno = EIO;  // shrank under us
  return got == static_cast<ssize_t>(n);
}

struct Header {
  std::uint8_t stream;
  std::uint32_t length;
};

// The header at `offset` when a whole record lies there; nullopt at the (possibly torn) end.
std::expected<std::optional<Header>, std::string> header_at(int fd, std::uint64_t offset, std::uint64_t size) {
  if (offset + kRecordHeaderBytes > size) return std::optional<Header>{};
  unsigned char h[kRecordHeaderBytes];
  if (!pread_all(fd, reinterpret_cast<char*>(h), sizeof h, offset))
    return std::unexpected(std::string("read output.log: ") + std::strerror(errno));
  Header header{h[0], static_cast<std::uint32_t>(h[1]) | static_cast<std::uint32_t>(h[2]) << 8 |
                          static_cast<std::uint32_t>(h[3]) << 16 | static_cast<std::uint32_t>(h[4]) << 24};
  if ((header.stream != kStdout && header.stream != kStderr) || header.length > kMaxRecordData)
    return std::unexpected("output.log is corrupt at offset " + std::to_string(offset));
  if (offset + kRecordHeaderBytes + header.length > size) return std::optional<Header>{};
  return std::optional<Header>{header};
}

std::expected<std::uint64_t, std::string> file_size(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::unexpected(std::string("stat output.log: ") + std::strerror(errno));
  return static_cast<std::uint64_t>(st.st_size);
}

}  // namespace

std::string encode_record(std::uint8_t stream, std::string_view data) {
  std::string out;
  out.reserve(kRecordHeaderBytes + data.size());
  auto n = static_cast<std::uint32_t>(data.size());
  out.push_back(static_cast<char>(stream));
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out.append(data);
  return out;
}

bool append_record(int fd, std::uint8_t stream, std::string_view data) {
  std::string record = encode_record(stream, data);
  return ferry::posix::write_full(fd, record.data(), record.size()) >= 0;
}

std::expected<LogChunk, std::string> read_records(int fd, std::uint64_t offset, std::size_t max_bytes) {
  auto size = file_size(fd);
  if (!size) return std::unexpected(size.error());
  LogChunk chunk;
  chunk.next = offset;
  std::size_t total = 0;
  while (true) {
    auto header = header_at(fd, chunk.next, *size);
    if (!header) return std::unexpected(header.error());
    if (!*header) break;
    if (!chunk.records.empty() && total + (*header)->length > max_bytes) break;
    LogRecord record{chunk.next, (*header)->stream, std::string((*header)->length, '\0')};
    if (record.data.size() > 0 && !pread_all(fd, record.data.data(), record.data.size(), chunk.next + kRecordHeaderBytes))
      return std::unexpected(std::string("read output.log: ") + std::strerror(errno));
    total += record.data.size();
    chunk.next += kRecordHeaderBytes + record.data.size();
    chunk.records.push_back(std::move(record));
    if (total >= max_bytes) break;
  }
  return chunk;
}

std::expected<void, std::string> check_offset(int fd, std::uint64_t offset, std::uint64_t from) {
  auto size = file_size(fd);
  if (!size) return std::unexpected(size.error());
  constexpr std::size_t kBlock = 1u << 20;
  std::string block;
  std::uint64_t block_start = 0;  // file offset of block[0]
  std::uint64_t at = from <= offset ? from : 0;
  while (at < offset) {
    if (at + kRecordHeaderBytes > *size)
      return std::unexpected("offset " + std::to_string(offset) + " is beyond the end of the output (" +
                             std::to_string(at) + " bytes of complete records)");
    if (block.empty() || at < block_start || at + kRecordHeaderBytes > block_start + block.size()) {
      block_start = at;
      block.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, *size - at)));
      if (!pread_all(fd, block.data(), block.size(), at))
        return std::unexpected(std::string("read output.log: ") + std::strerror(errno));
    }
    const auto* h = reinterpret_cast<const unsigned char*>(block.data() + (at - block_start));
    std::uint32_t length = static_cast<std::uint32_t>(h[1]) | static_cast<std::uint32_t>(h[2]) << 8 |
                           static_cast<std::uint32_t>(h[3]) << 16 | static_cast<std::uint32_t>(h[4]) << 24;
    if ((h[0] != kStdout && h[0] != kStderr) || length > kMaxRecordData)
      return std::unexpected("output.log is corrupt at offset " + std::to_string(at));
    if (at + kRecordHeaderBytes + length > *size)
      return std::unexpected("offset " + std::to_string(offset) + " is beyond the end of the output (" +
                             std::to_string(at) + " bytes of complete records)");
    at += kRecordHeaderBytes + length;
  }
  if (at != offset) return std::unexpected("offset " + std::to_string(offset) + " is not a record boundary");
  return {};
}

}  // namespace ferry::agent::run

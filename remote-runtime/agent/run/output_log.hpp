// output.log, a run's output as records: [u8 stream][u32 LE length][bytes], length <= 64 KiB.
// The supervisor appends whole records; readers stop before a torn last record, and record
// boundaries are the only offsets an attach may start from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::agent::run {

inline constexpr std::size_t kRecordHeaderBytes = 5;
inline constexpr std::size_t kMaxRecordData = 64u << 10;
inline constexpr std::uint8_t kStdout = 1;
inline constexpr std::uint8_t kStderr = 2;

// Header + data in one buffer, so one write() appends the whole record.
std::string encode_record(std::uint8_t stream, std::string_view data);

// Appends one record (data <= kMaxRecordData); false with errno set on a write error.
bool append_record(int fd, std::uint8_t stream, std::string_view data);

struct LogRecord {
  std::uint64_t offset = 0;
  std::uint8_t stream = kStdout;
  std::string data;
};

struct LogChunk {
  std::vector<LogRecord> records;
  std::uint64_t next = 0;  // offset after the last record returned
};

// Complete records from `offset` (a record boundary) with at most max_bytes of data in all,
// but always the first record when one is complete, so a reader makes progress.
std::expected<LogChunk, std::string> read_records(int fd, std::uint64_t offset, std::size_t max_bytes);

// Walks the headers from `from` (a known boundary <= offset, 0 when none is known): ok when
// `offset` is a record boundary within the complete records. Reads the file in large blocks, so
// the walk costs about one sequential read of the bytes it skips.
std::expected<void, std::string> check_offset(int fd, std::uint64_t offset, std::uint64_t from = 0);

}  // namespace ferry::agent::run

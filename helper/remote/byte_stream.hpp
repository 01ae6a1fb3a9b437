// A bidirectional byte stream to an agent: the pipes of a local subprocess, or an SSH exec
// channel. The agent link only needs blocking reads with a deadline, whole writes, and a
// way to wake a blocked reader on close.
#pragma once

#include <chrono>
#include <cstddef>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ferry::remote {

using Clock = std::chrono::steady_clock;

enum class ReadStatus { data, eof, timeout, interrupted, error };

struct ReadResult {
  ReadStatus status = ReadStatus::error;
  std::size_t bytes = 0;
  std::string error;  // for ReadStatus::error
};

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Blocks until some bytes arrive, EOF, the deadline (when given), interrupt() or an error.
  virtual ReadResult read_some(std::span<char> buffer, std::optional<Clock::time_point> deadline) = 0;
  // Writes everything or fails; the caller serialises writers.
  virtual std::expected<void, std::string> write_all(std::string_view bytes) = 0;
  // Sends EOF to the peer (the agent exits on it).
  virtual void close_write() = 0;
  // Wakes a blocked read_some, which returns ReadStatus::interrupted from then on.
  virtual void interrupt() = 0;
};

// A stream over two file descriptors (a read end and a write end), owned and closed here.
class FdStream final : public ByteStream {
 public:
  FdStream(int read_fd, int write_fd);
  ~FdStream() override;
  FdStream(const FdStream&) = delete;
  FdStream& operator=(const FdStream&) = delete;

  ReadResult read_some(std::span<char> buffer, std::optional<Clock::time_point> deadline) override;
  std::expected<void, std::string> write_all(std::string_view bytes) override;
  void close_write() override;
  void interrupt() override;

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  int wake_read_ = -1;   // self-pipe: interrupt() writes, read_some polls it
  int wake_write_ = -1;
};

}  // namespace ferry::remote

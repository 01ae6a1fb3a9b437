// The agent's one writer of stdout frames. Replies (main thread) and run notifications (tailer
// threads) share it; a mutex keeps frames whole. Writes block while the helper's pipe is full,
// so a slow reader stalls the streaming threads instead of growing buffers.
#pragma once

#include <atomic>
#include <mutex>
#include <span>
#include <string_view>

#include "protocol/jsonrpc.hpp"

namespace ferry::agent::run {

class FrameWriter {
 public:
  explicit FrameWriter(int fd) : fd_(fd) {}

  // Encodes outside the lock, writes the frame whole. False once the link is broken (then every
  // later send fails at once, so streaming threads end instead of retrying).
  bool send(const protocol::Message& message);
  bool send_notification(std::string method, protocol::json params);
  // A message (or batch) already shaped as JSON: what the agent's Dispatcher sends.
  bool send_value(const protocol::json& value);
  // Raw bytes, also under the lock (the magic line before the first frame).
  bool send_raw(std::string_view bytes);

  bool broken() const { return broken_.load(); }

 private:
  bool write_locked(std::string_view bytes);
  bool write_locked(std::span<const std::string_view> pieces);
  int fd_;
  std::mutex mutex_;
  std::atomic<bool> broken_{false};
};

}  // namespace ferry::agent::run

// The one writer of a server's output stream: frames and writes messages from the reading
// thread and from workers without interleaving. The reading thread corks the channel while it
// handles a burst of input, so many inline replies leave in one write() instead of one each.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/codec.hpp"

namespace ferry::server {

class OutputChannel {
 public:
  OutputChannel(int fd, protocol::Encoding encoding) : fd_(fd), encoding_(encoding) {}

  // Encodes, frames and writes (or queues, while corked). Never throws; a dead peer marks the
  // channel broken and later messages are dropped.
  void send(const nlohmann::json& message);
  void cork();
  void uncork();  // flushes what was queued
  bool broken() const { return broken_.load(); }

 private:
  void write_locked(std::string_view bytes);
  int fd_;
  protocol::Encoding encoding_;
  std::mutex mutex_;
  std::string queued_;
  int cork_depth_ = 0;
  std::atomic<bool> broken_{false};
};

}  // namespace ferry::server

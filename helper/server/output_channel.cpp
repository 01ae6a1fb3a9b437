// The serialised output stream: see output_channel.hpp.
#include "helper/server/output_channel.hpp"

#include <cerrno>
#include <cstring>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "protocol/framing.hpp"

namespace ferry::server {

void OutputChannel::send(const nlohmann::json& message) {
  std::string frame;
  try {
    frame = protocol::encode_frame(protocol::encode_body(message, encoding_));
  } catch (const std::exception& e) {
    spdlog::error("cannot encode an outgoing message: {}", e.what());
    return;
  }
  std::lock_guard lock(mutex_);
  if (cork_depth_ > 0) {
    queued_ += frame;
    return;
  }
  write_locked(frame);
}

void OutputChannel::cork() {
  std::lock_guard lock(mutex_);
  ++cork_depth_;
}

void OutputChannel::uncork() {
  std::lock_guard lock(mutex_);
  if (cork_depth_ > 0 && --cork_depth_ == 0 && !queued_.empty()) {
    write_locked(queued_);
    queued_.clear();
  }
}

void OutputChannel::write_locked(std::string_view bytes) {
  if (broken_) return;
  while (!bytes.empty()) {
    ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::warn("output stream closed ({}); dropping further messages", std::strerror(errno));
      broken_ = true;
      return;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace ferry::server

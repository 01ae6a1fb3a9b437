// Thread-safe frame writer: see frame_writer.hpp.
#include "remote-runtime/agent/run/frame_writer.hpp"

#include <unistd.h>

#include <cerrno>

#include "protocol/agent_wire.hpp"

namespace ferry::agent::run {

bool FrameWriter::write_locked(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      broken_ = true;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool FrameWriter::send_raw(std::string_view bytes) {
  if (broken_) return false;
  std::lock_guard lock(mutex_);
  return write_locked(bytes);
}

bool FrameWriter::send(const protocol::Message& message) {
  if (broken_) return false;
  const protocol::AgentFrame frame = protocol::encode_agent_frame_buffer(protocol::to_json(message));
  std::lock_guard lock(mutex_);
  return write_locked(frame.bytes());
}

bool FrameWriter::send_value(const protocol::json& value) {
  if (broken_) return false;
  const protocol::AgentFrame frame = protocol::encode_agent_frame_buffer(value);
  std::lock_guard lock(mutex_);
  return write_locked(frame.bytes());
}

bool FrameWriter::send_notification(std::string method, protocol::json params) {
  return send(protocol::Notification{std::move(method), std::move(params)});
}

}  // namespace ferry::agent::run

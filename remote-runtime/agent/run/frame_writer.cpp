// Thread-safe frame writer: see frame_writer.hpp.
#include "remote-runtime/agent/run/frame_writer.hpp"

#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "protocol/agent_wire.hpp"

namespace ferry::agent::run {

bool FrameWriter::write_locked(std::string_view bytes) { return write_locked(std::span<const std::string_view>(&bytes, 1)); }

// One writev for a frame's pieces (its header and small fields, and a file chunk in place).
bool FrameWriter::write_locked(std::span<const std::string_view> pieces) {
  std::vector<iovec> iov;
  iov.reserve(pieces.size());
  for (auto p : pieces)
    if (!p.empty()) iov.push_back({const_cast<char*>(p.data()), p.size()});
  std::size_t at = 0;
  while (at < iov.size()) {
    const ssize_t n = ::writev(fd_, iov.data() + at, static_cast<int>(std::min<std::size_t>(iov.size() - at, IOV_MAX)));
    if (n < 0) {
      if (errno == EINTR) continue;
      broken_ = true;
      return false;
    }
    // Past what went out: whole pieces, then into the first one left.
    auto left = static_cast<std::size_t>(n);
    while (at < iov.size() && left >= iov[at].iov_len) left -= iov[at++].iov_len;
    if (at < iov.size()) {
      iov[at].iov_base = static_cast<char*>(iov[at].iov_base) + left;
      iov[at].iov_len -= left;
    }
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
  const protocol::json value = protocol::to_json(message);
  const protocol::AgentFrame frame = protocol::encode_agent_frame_buffer(value);
  std::lock_guard lock(mutex_);
  return write_locked(frame.pieces());
}

bool FrameWriter::send_value(const protocol::json& value) {
  if (broken_) return false;
  const protocol::AgentFrame frame = protocol::encode_agent_frame_buffer(value);
  std::lock_guard lock(mutex_);
  return write_locked(frame.pieces());
}

bool FrameWriter::send_notification(std::string method, protocol::json params) {
  return send(protocol::Notification{std::move(method), std::move(params)});
}

}  // namespace ferry::agent::run

// File-descriptor byte stream: see byte_stream.hpp.
#include "helper/remote/byte_stream.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

namespace ferry::remote {
namespace {

void ignore_sigpipe_once() {
  // Writing to a dead agent must be an EPIPE error, not the death of the helper.
  static std::once_flag once;
  std::call_once(once, [] { ::signal(SIGPIPE, SIG_IGN); });
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

FdStream::FdStream(int read_fd, int write_fd) : read_fd_(read_fd), write_fd_(write_fd) {
  ignore_sigpipe_once();
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0) {
    wake_read_ = p[0];
    wake_write_ = p[1];
  }
}

FdStream::~FdStream() {
  close_fd(read_fd_);
  close_fd(write_fd_);
  close_fd(wake_read_);
  close_fd(wake_write_);
}

ReadResult FdStream::read_some(std::span<char> buffer, std::optional<Clock::time_point> deadline) {
  while (true) {
    pollfd fds[2] = {{read_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    int timeout_ms = -1;
    if (deadline) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
      if (left <= 0) return {ReadStatus::timeout, 0, {}};
      timeout_ms = static_cast<int>(std::min<long long>(left, 1 << 30));
    }
    int rc = ::poll(fds, wake_read_ >= 0 ? 2 : 1, timeout_ms);
    if (rc < 0) {
      if (errno == EINTR) continue;
      return {ReadStatus::error, 0, std::string("poll: ") + std::strerror(errno)};
    }
    if (rc == 0) return {ReadStatus::timeout, 0, {}};
    if (wake_read_ >= 0 && (fds[1].revents & POLLIN)) return {ReadStatus::interrupted, 0, {}};
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = ::read(read_fd_, buffer.data(), buffer.size());
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return {ReadStatus::error, 0, std::string("read: ") + std::strerror(errno)};
      }
      if (n == 0) return {ReadStatus::eof, 0, {}};
      return {ReadStatus::data, static_cast<std::size_t>(n), {}};
    }
    if (fds[0].revents & POLLNVAL) return {ReadStatus::error, 0, "read end is closed"};
  }
}

std::expected<void, std::string> FdStream::write_all(std::string_view bytes) {
  if (write_fd_ < 0) return std::unexpected("the link to the agent is closed");
  while (!bytes.empty()) {
    ssize_t n = ::write(write_fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(std::string("write to the agent: ") + std::strerror(errno));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

void FdStream::close_write() { close_fd(write_fd_); }

void FdStream::interrupt() {
  if (wake_write_ >= 0) {
    char c = 1;
    [[maybe_unused]] auto n = ::write(wake_write_, &c, 1);
  }
}

}  // namespace ferry::remote

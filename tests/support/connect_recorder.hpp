// A TCP listener on 127.0.0.1 that counts the connections made to it and closes each at once: a
// host that must never be contacted (an untrusted project's) is pointed at it. Header-only.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <thread>

namespace ferry::test {

class ConnectRecorder {
 public:
  ConnectRecorder() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("ConnectRecorder: cannot listen on 127.0.0.1");
    port_ = ntohs(addr.sin_port);
    thread_ = std::jthread([this](std::stop_token stop) {
      while (!stop.stop_requested()) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) {
          ++count_;
          ::close(c);
        }
      }
    });
  }
  ~ConnectRecorder() {
    thread_.request_stop();
    thread_.join();
    ::close(fd_);
  }
  ConnectRecorder(const ConnectRecorder&) = delete;
  ConnectRecorder& operator=(const ConnectRecorder&) = delete;

  int port() const { return port_; }
  // Connections accepted so far, plus one still waiting in the backlog (so a connect made just
  // before the check is not missed).
  int count() const {
    pollfd p{fd_, POLLIN, 0};
    return count_.load() + (::poll(&p, 1, 0) > 0 ? 1 : 0);
  }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> count_{0};
  std::jthread thread_;
};

}  // namespace ferry::test

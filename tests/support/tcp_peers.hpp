// Small real TCP peers for tests (header-only): blocking loopback client helpers, an echo server
// that half-closes after echoing everything, and a counter of this process's open fds.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace ferry::test {

// connect() to ip:port (IPv4); the fd, or -errno.
inline int tcp_connect(const std::string& ip, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    int e = errno;
    ::close(fd);
    return -e;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

inline bool write_all_fd(int fd, std::string_view data) {
  while (!data.empty()) {
    auto n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads until EOF, an error, or the deadline (then throws: a test must not hang).
inline std::string read_to_eof(int fd, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string out;
  std::vector<char> buf(1 << 16);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw std::runtime_error("read_to_eof: timed out after " + std::to_string(out.size()) + " bytes");
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    auto n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
}

// Reads exactly n bytes (or throws at EOF / the deadline).
inline std::string read_exactly(int fd, std::size_t n, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string out;
  std::vector<char> buf(1 << 16);
  while (out.size() < n) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw std::runtime_error("read_exactly: timed out");
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    auto r = ::recv(fd, buf.data(), std::min(buf.size(), n - out.size()), 0);
    if (r <= 0) throw std::runtime_error("read_exactly: EOF after " + std::to_string(out.size()) + " bytes");
    out.append(buf.data(), static_cast<std::size_t>(r));
  }
  return out;
}

// A TCP server on 127.0.0.1 (port 0: any) that gives each connection its own thread running
// `serve(fd, n)` (n counts connections from 0); the server then shuts the write side and drains
// until the peer closes, so the last bytes are not lost to a reset. Stopping shuts every
// connection a failed test left open, so no worker (and no test) waits forever.
class LoopbackServer {
 public:
  using Serve = std::function<void(int fd, int n, const std::atomic<bool>& stopping)>;
  explicit LoopbackServer(Serve serve, int backlog = 128) : serve_(std::move(serve)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, backlog) != 0)
      throw std::runtime_error("LoopbackServer: cannot listen");
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~LoopbackServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    acceptor_.join();
    ::close(fd_);
    {
      std::lock_guard lk(mutex_);
      for (int c : clients_) ::shutdown(c, SHUT_RDWR);
    }
    for (auto& t : workers_) t.join();
  }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;
  int port() const { return port_; }
  int connections() const { return connections_.load(); }

 private:
  void accept_loop() {
    while (!stop_) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (stop_) return;
        continue;
      }
      const int n = connections_++;
      std::lock_guard lk(mutex_);
      clients_.push_back(c);
      workers_.emplace_back([this, c, n] {
        serve_(c, n, stop_);
        ::shutdown(c, SHUT_WR);
        char buf[4096];
        while (::recv(c, buf, sizeof buf, 0) > 0) {
        }
        std::lock_guard lk2(mutex_);
        std::erase(clients_, c);
        ::close(c);
      });
    }
  }
  Serve serve_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::vector<int> clients_;
};

// Echoes each connection's bytes back; at the client's EOF it shuts its own write side, so a
// half-close travels both ways.
class EchoServer : public LoopbackServer {
 public:
  EchoServer()
      : LoopbackServer([](int c, int, const std::atomic<bool>&) {
          std::vector<char> buf(1 << 16);
          for (;;) {
            auto n = ::recv(c, buf.data(), buf.size(), 0);
            if (n <= 0) break;
            if (!write_all_fd(c, std::string_view(buf.data(), static_cast<std::size_t>(n)))) break;
          }
        }) {}
};

inline std::size_t open_fd_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// Fds of a closed connection close on other threads (a relay's io thread, the echo server's
// worker): waits, bounded, until the count is at most `want`, and returns the last count.
inline std::size_t settle_fd_count(std::size_t want, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (open_fd_count() > want && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return open_fd_count();
}

}  // namespace ferry::test

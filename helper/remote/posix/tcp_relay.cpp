// The loopback TCP relay behind LocalEndpoint's tunnels (tcp_relay.hpp).
#include "helper/remote/tcp_relay.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <spdlog/spdlog.h>

namespace ferry::remote {
namespace {

// Copies from -> to until EOF (then half-closes `to`) or an error (then shuts both).
void copy(int from, int to) {
  std::vector<char> buf(256 << 10);
  for (;;) {
    auto n = ::recv(from, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      ::shutdown(to, SHUT_WR);
      return;
    }
    if (n < 0) break;
    for (ssize_t off = 0; off < n;) {
      auto w = ::send(to, buf.data() + off, static_cast<std::size_t>(n - off), MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        ::shutdown(from, SHUT_RDWR);
        ::shutdown(to, SHUT_RDWR);
        return;
      }
      off += w;
    }
  }
  ::shutdown(from, SHUT_RDWR);
  ::shutdown(to, SHUT_RDWR);
}

}  // namespace

TcpRelay::TcpRelay(LoopbackListener listener, std::string target_host, int target_port)
    : listener_(std::move(listener)), target_host_(std::move(target_host)), target_port_(target_port) {
  if (::pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
  acceptor_ = std::thread([this] { accept_loop(); });
}

TcpRelay::~TcpRelay() { close(); }

void TcpRelay::close() {
  if (closing_.exchange(true)) return;
  if (wake_[1] >= 0) (void)::write(wake_[1], "x", 1);
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lk(mutex_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    threads = std::move(threads_);
  }
  for (auto& t : threads) t.join();
  listener_.close();
  for (int& fd : wake_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

void TcpRelay::accept_loop() {
  while (!closing_) {
    pollfd p[2] = {{listener_.fd(), POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (closing_ || (p[1].revents & POLLIN)) return;
    int client = ::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    ++accepted_;
    std::lock_guard lk(mutex_);
    threads_.emplace_back([this, client] { serve(client); });
  }
}

void TcpRelay::serve(int client) {
  int target = net::connect_tcp(target_host_, target_port_);
  if (target < 0) {
    spdlog::warn("tunnel: cannot connect to {}:{}", target_host_, target_port_);
    ::close(client);
    return;
  }
  {
    std::lock_guard lk(mutex_);
    if (closing_) {
      ::close(client);
      ::close(target);
      return;
    }
    fds_.push_back(client);
    fds_.push_back(target);
  }
  ++live_;
  std::thread up([&] { copy(client, target); });
  copy(target, client);
  up.join();
  --live_;
  std::lock_guard lk(mutex_);
  std::erase(fds_, client);
  std::erase(fds_, target);
  ::close(client);
  ::close(target);
}

}  // namespace ferry::remote

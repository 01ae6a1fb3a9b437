// DelayRelay: one acceptor thread; per connection two directions, each a reader thread that stamps
// chunks with their due time and a writer thread that sends them when due, in order.
#include "bench/wan/delay_relay.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <stdexcept>
#include <string>

namespace ferry::bench {
namespace {

using Clock = std::chrono::steady_clock;

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

// Bytes from one socket to the other, each chunk held until its due time.
struct Direction {
  struct Chunk {
    Clock::time_point due;
    std::string bytes;  // empty: the source's EOF, passed on as a half-close
  };
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Chunk> queue;
  std::size_t held = 0;
  bool aborted = false;
};

}  // namespace

struct DelayRelay::Connection {
  int a = -1, b = -1;  // the client's socket, the target's
  Direction up, down;  // a -> b, b -> a
  std::vector<std::thread> threads;

  void abort() {
    for (Direction* d : {&up, &down}) {
      std::lock_guard lock(d->mutex);
      d->aborted = true;
      d->cv.notify_all();
    }
    ::shutdown(a, SHUT_RDWR);
    ::shutdown(b, SHUT_RDWR);
  }
  void read_loop(int from, Direction& d, std::chrono::milliseconds delay, std::size_t cap) {
    std::string buf(256u << 10, '\0');
    for (;;) {
      {
        std::unique_lock lock(d.mutex);
        d.cv.wait(lock, [&] { return d.aborted || d.held < cap; });
        if (d.aborted) return;
      }
      ssize_t n = ::read(from, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      std::lock_guard lock(d.mutex);
      d.queue.push_back({Clock::now() + delay, n > 0 ? buf.substr(0, static_cast<std::size_t>(n)) : std::string()});
      d.held += n > 0 ? static_cast<std::size_t>(n) : 0;
      d.cv.notify_all();
      if (n <= 0) return;
    }
  }
  void write_loop(int to, Direction& d) {
    for (;;) {
      Direction::Chunk chunk;
      {
        std::unique_lock lock(d.mutex);
        for (;;) {
          if (d.aborted) return;
          if (!d.queue.empty() && d.queue.front().due <= Clock::now()) break;
          if (d.queue.empty()) d.cv.wait(lock);
          else d.cv.wait_until(lock, d.queue.front().due);
        }
        chunk = std::move(d.queue.front());
        d.queue.pop_front();
        d.held -= chunk.bytes.size();
        d.cv.notify_all();
      }
      if (chunk.bytes.empty()) {
        ::shutdown(to, SHUT_WR);
        return;
      }
      for (std::size_t off = 0; off < chunk.bytes.size();) {
        ssize_t n = ::send(to, chunk.bytes.data() + off, chunk.bytes.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return abort();
        off += static_cast<std::size_t>(n);
      }
    }
  }
  ~Connection() {
    abort();
    for (auto& t : threads) t.join();
    ::close(a);
    ::close(b);
  }
};

DelayRelay::DelayRelay(DelayRelayOptions options) : options_(options) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto addr = loopback(0);
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0 || ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("delay relay: cannot listen on 127.0.0.1");
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

DelayRelay::~DelayRelay() {
  stopping_ = true;
  acceptor_.join();
  stop();
  ::close(listen_fd_);
}

void DelayRelay::stop() {
  std::vector<std::shared_ptr<Connection>> all;
  {
    std::lock_guard lock(mutex_);
    all.swap(connections_);
  }
  all.clear();  // each destructor aborts its connection and joins its threads
}

void DelayRelay::accept_loop() {
  const auto end = Clock::now() + options_.lifetime;
  while (!stopping_ && Clock::now() < end) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;  // wakes to check stopping_ and the lifetime
    int a = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (a < 0) continue;
    int b = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto target = loopback(options_.target_port);
    if (b < 0 || ::connect(b, reinterpret_cast<sockaddr*>(&target), sizeof target) != 0) {
      ::close(a);
      if (b >= 0) ::close(b);
      continue;
    }
    int one = 1;
    ::setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_shared<Connection>();
    c->a = a;
    c->b = b;
    auto delay = options_.one_way;
    auto cap = options_.queue_bytes;
    Connection* raw = c.get();
    c->threads.emplace_back([raw, delay, cap] { raw->read_loop(raw->a, raw->up, delay, cap); });
    c->threads.emplace_back([raw] { raw->write_loop(raw->b, raw->up); });
    c->threads.emplace_back([raw, delay, cap] { raw->read_loop(raw->b, raw->down, delay, cap); });
    c->threads.emplace_back([raw] { raw->write_loop(raw->a, raw->down); });
    ++accepted_;
    std::lock_guard lock(mutex_);
    connections_.push_back(std::move(c));
  }
  if (!stopping_) stop();  // the lifetime ran out: nothing outlives it
}

}  // namespace ferry::bench

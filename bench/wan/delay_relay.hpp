// A loopback delay relay for bench/wan: a TCP proxy on 127.0.0.1 that holds every byte for a fixed
// time in each direction before passing it on, in order, so a loopback sshd looks like a far-away
// box (this kernel has no netem). Bounded in memory (a full queue stops reading, as a real link's
// bandwidth-delay product would) and in time (it shuts itself down when its lifetime ends).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ferry::bench {

struct DelayRelayOptions {
  int target_port = 0;                          // 127.0.0.1:target_port is what the relay fronts
  std::chrono::milliseconds one_way{25};        // added to each direction (RTT grows by twice this)
  std::chrono::seconds lifetime{3600};          // after this the relay closes everything by itself
  std::size_t queue_bytes = 64u << 20;          // per direction per connection: bytes held at most
};

class DelayRelay {
 public:
  explicit DelayRelay(DelayRelayOptions options);
  ~DelayRelay();  // closes every connection and joins every thread
  DelayRelay(const DelayRelay&) = delete;
  DelayRelay& operator=(const DelayRelay&) = delete;

  int port() const { return port_; }
  std::size_t connections() const { return accepted_.load(); }

 private:
  struct Connection;
  void accept_loop();
  void stop();

  DelayRelayOptions options_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> accepted_{0};
  std::mutex mutex_;
  std::vector<std::shared_ptr<Connection>> connections_;
  std::thread acceptor_;
};

}  // namespace ferry::bench

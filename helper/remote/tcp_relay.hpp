// A plain loopback TCP relay: the `local` host's tunnels, where "the remote" is this machine. A
// listener accepts and each connection is copied both ways to a target address by two blocking
// threads (the local host is for development; the SSH path is the fast one). Half-closes travel
// each way; closing the relay closes its listener and live connections.
#pragma once

#include <atomic>
#include <expected>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "helper/remote/loopback_listener.hpp"

namespace ferry::remote {

class TcpRelay {
 public:
  // Starts accepting on `listener` (taken over) and relays to target_host:target_port.
  TcpRelay(LoopbackListener listener, std::string target_host, int target_port);
  ~TcpRelay();
  TcpRelay(const TcpRelay&) = delete;
  TcpRelay& operator=(const TcpRelay&) = delete;

  int port() const { return listener_.port(); }
  std::uint64_t accepted() const { return accepted_.load(); }
  std::uint64_t live() const { return live_.load(); }
  void close();

 private:
  void accept_loop();
  void serve(int client);

  LoopbackListener listener_;
  std::string target_host_;
  int target_port_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> closing_{false};
  std::atomic<std::uint64_t> accepted_{0};
  std::atomic<std::uint64_t> live_{0};
  std::mutex mutex_;
  std::vector<int> fds_;  // live connections' sockets, shut down on close
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

}  // namespace ferry::remote

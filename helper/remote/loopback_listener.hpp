// A listening TCP socket on loopback for a tunnel, kept by the endpoint across reconnects: while
// the link is down, connections wait in its backlog instead of being refused.
#pragma once

#include <expected>
#include <string>

namespace ferry::remote {

class LoopbackListener {
 public:
  // Binds address:port (address: 127.0.0.1, localhost or ::1; port 0: ephemeral) and listens.
  // "Port in use" names the holder when /proc says who it is.
  static std::expected<LoopbackListener, std::string> open(const std::string& address, int port);

  LoopbackListener() = default;
  ~LoopbackListener();
  LoopbackListener(LoopbackListener&& other) noexcept;
  LoopbackListener& operator=(LoopbackListener&& other) noexcept;
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;

  int fd() const { return fd_; }
  int port() const { return port_; }
  void close();

 private:
  int fd_ = -1;
  int port_ = 0;
};

// "pid 1234 (python3)" for the process listening on a TCP port here, or "" if unknown.
std::string port_holder(int port);

}  // namespace ferry::remote

// A listening TCP socket on loopback for a tunnel, kept by the endpoint across reconnects: while
// the link is down, connections wait in its backlog instead of being refused.
#pragma once

#include <expected>
#include <string>

#include "common/socket_calls.hpp"

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

  net::NativeSocket fd() const { return fd_; }
  int port() const { return port_; }
  void close();

 private:
  net::NativeSocket fd_ = net::kNoSocket;
  int port_ = 0;
};

}  // namespace ferry::remote

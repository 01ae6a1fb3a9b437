// Loopback listening sockets for tunnels (loopback_listener.hpp).
#include "helper/remote/loopback_listener.hpp"

#include <cerrno>
#include <cstring>

namespace ferry::remote {

std::expected<LoopbackListener, std::string> LoopbackListener::open(const std::string& address, int port) {
  bool v6 = address == "::1";
  if (address != "127.0.0.1" && address != "localhost" && !v6)
    return std::unexpected("ferry binds tunnels to loopback only: use 127.0.0.1, not " + address);
  int err = 0;
  const net::NativeSocket fd = net::listen_loopback(v6, port, err);
  std::string where = (v6 ? "[::1]:" : "127.0.0.1:") + std::to_string(port);
  if (fd == net::kNoSocket) {
    if (err == EADDRINUSE) {
      std::string holder = net::port_holder(port);
      return std::unexpected("cannot listen on " + where + ": the port is in use" +
                             (holder.empty() ? "" : " by " + holder) + "; pick another local port (LPORT:HOST:RPORT) or 0 for any free one");
    }
    return std::unexpected("cannot listen on " + where + ": " + std::strerror(err));
  }
  LoopbackListener l;
  l.fd_ = fd;
  l.port_ = net::socket_local_port(fd);
  return l;
}

LoopbackListener::~LoopbackListener() { close(); }

LoopbackListener::LoopbackListener(LoopbackListener&& o) noexcept : fd_(o.fd_), port_(o.port_) { o.fd_ = net::kNoSocket; }

LoopbackListener& LoopbackListener::operator=(LoopbackListener&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    port_ = o.port_;
    o.fd_ = net::kNoSocket;
  }
  return *this;
}

void LoopbackListener::close() {
  if (fd_ != net::kNoSocket) net::socket_close(fd_);
  fd_ = net::kNoSocket;
}

}  // namespace ferry::remote

// native_socket_calls: a POSIX socket's calls for a SocketPump (socket_pump.hpp).
#include <sys/socket.h>

#include <cerrno>

#include "common/socket_pump.hpp"

namespace ferry {

SocketPump::Socket native_socket_calls(net::NativeSocket fd) {
  return SocketPump::Socket{
      [fd](std::uint8_t* b, std::size_t n) -> std::ptrdiff_t {
        for (;;) {
          auto got = ::recv(fd, b, n, 0);
          if (got >= 0 || errno != EINTR) return got;
        }
      },
      [fd](std::span<const std::uint8_t> s) {
        while (!s.empty()) {
          auto w = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) return false;
          s = s.subspan(static_cast<std::size_t>(w));
        }
        return true;
      },
      [fd] { ::shutdown(fd, SHUT_WR); },
      [fd] { ::shutdown(fd, SHUT_RDWR); }};
}

}  // namespace ferry

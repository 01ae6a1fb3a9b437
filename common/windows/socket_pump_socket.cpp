// native_socket_calls: a Winsock socket's calls for a SocketPump (socket_pump.hpp).
#include <winsock2.h>

#include <algorithm>

#include "common/socket_pump.hpp"

namespace ferry {

SocketPump::Socket native_socket_calls(net::NativeSocket native) {
  const auto s = static_cast<SOCKET>(native);
  return SocketPump::Socket{
      [s](std::uint8_t* b, std::size_t n) -> std::ptrdiff_t {
        const int got = ::recv(s, reinterpret_cast<char*>(b), static_cast<int>(std::min<std::size_t>(n, 1 << 30)), 0);
        return got == SOCKET_ERROR ? -1 : got;
      },
      [s](std::span<const std::uint8_t> d) {
        while (!d.empty()) {
          const int w = ::send(s, reinterpret_cast<const char*>(d.data()), static_cast<int>(std::min<std::size_t>(d.size(), 1 << 30)), 0);
          if (w == SOCKET_ERROR || w <= 0) return false;
          d = d.subspan(static_cast<std::size_t>(w));
        }
        return true;
      },
      [s] { ::shutdown(s, SD_SEND); },
      [s] { ::shutdown(s, SD_BOTH); }};
}

}  // namespace ferry

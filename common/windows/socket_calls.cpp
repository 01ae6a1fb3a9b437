// The socket calls of socket_calls.hpp on Winsock: WSA errors mapped to errno values, and the
// socket pair made as a loopback TCP connection (Windows has no socketpair).
#include "common/socket_calls.hpp"

#include <winsock2.h>
#include <ws2tcpip.h>
#include <iphlpapi.h>
#include <windows.h>

#include <cerrno>
#include <filesystem>
#include <vector>

namespace ferry::net {
namespace {

// Overlapped, as Asio's IOCP needs; never inherited by a child.
constexpr DWORD kFlags = WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT;

int errno_of(int wsa) {
  switch (wsa) {
    case WSAEWOULDBLOCK: return EAGAIN;
    case WSAEINTR: return EINTR;
    case WSAECONNRESET: return ECONNRESET;
    case WSAECONNABORTED: return ECONNABORTED;
    case WSAENOTCONN: return ENOTCONN;
    case WSAESHUTDOWN: return EPIPE;
    case WSAETIMEDOUT: return ETIMEDOUT;
    case WSAENOTSOCK: return ENOTSOCK;
    case WSAEMSGSIZE: return EMSGSIZE;
    case WSAECONNREFUSED: return ECONNREFUSED;
    default: return EIO;
  }
}

// A call on a non-blocking socket that would block; made non-blocking for just this call.
template <class Call>
std::ptrdiff_t with_no_wait(SOCKET s, bool dont_wait, Call call) {
  u_long on = 1, off = 0;
  if (dont_wait) ::ioctlsocket(s, FIONBIO, &on);
  const int n = call();
  const int err = n == SOCKET_ERROR ? ::WSAGetLastError() : 0;
  if (dont_wait) ::ioctlsocket(s, FIONBIO, &off);
  return n == SOCKET_ERROR ? -errno_of(err) : n;
}

}  // namespace

std::ptrdiff_t socket_recv(NativeSocket s, void* buffer, std::size_t length, int flags) {
  const int len = length > 0x7fffffff ? 0x7fffffff : static_cast<int>(length);
  const int n = ::recv(static_cast<SOCKET>(s), static_cast<char*>(buffer), len, flags);
  return n == SOCKET_ERROR ? -errno_of(::WSAGetLastError()) : n;
}

std::ptrdiff_t socket_send(NativeSocket s, const void* buffer, std::size_t length, bool dont_wait) {
  const int len = length > 0x7fffffff ? 0x7fffffff : static_cast<int>(length);
  return with_no_wait(static_cast<SOCKET>(s), dont_wait,
                      [&] { return ::send(static_cast<SOCKET>(s), static_cast<const char*>(buffer), len, 0); });
}

void socket_shutdown(NativeSocket s, ShutdownHow how) {
  ::shutdown(static_cast<SOCKET>(s), how == ShutdownHow::read ? SD_RECEIVE : how == ShutdownHow::write ? SD_SEND : SD_BOTH);
}

void socket_close(NativeSocket s) { ::closesocket(static_cast<SOCKET>(s)); }

void socket_no_inherit(NativeSocket s) { ::SetHandleInformation(reinterpret_cast<HANDLE>(s), HANDLE_FLAG_INHERIT, 0); }

void socket_quick_ack(NativeSocket) {}

bool socket_send_queue_empty(NativeSocket) { return true; }

int socket_family(NativeSocket s) {
  sockaddr_storage addr{};
  int len = sizeof addr;
  return ::getsockname(static_cast<SOCKET>(s), reinterpret_cast<sockaddr*>(&addr), &len) == 0 ? addr.ss_family : -1;
}

NativeSocket socket_duplicate(NativeSocket s) {
  WSAPROTOCOL_INFOW info{};
  if (::WSADuplicateSocketW(static_cast<SOCKET>(s), ::GetCurrentProcessId(), &info) != 0) return kNoSocket;
  const SOCKET d = ::WSASocketW(FROM_PROTOCOL_INFO, FROM_PROTOCOL_INFO, FROM_PROTOCOL_INFO, &info, 0,
                                WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT);
  return d == INVALID_SOCKET ? kNoSocket : static_cast<NativeSocket>(d);
}

NativeSocket listen_loopback(bool v6, int port, int& error) {
  const SOCKET s = ::WSASocketW(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, IPPROTO_TCP, nullptr, 0, kFlags);
  if (s == INVALID_SOCKET) {
    error = errno_of(::WSAGetLastError());
    return kNoSocket;
  }
  // Windows' SO_REUSEADDR would let another program bind the same port and take connections
  // meant for the tunnel; exclusive use is what a Linux listener has anyway.
  const BOOL one = TRUE;
  ::setsockopt(s, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, reinterpret_cast<const char*>(&one), sizeof one);
  int rc;
  if (v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    a.sin6_port = htons(static_cast<u_short>(port));
    rc = ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<u_short>(port));
    rc = ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (rc != 0 || ::listen(s, SOMAXCONN) != 0) {
    const int wsa = ::WSAGetLastError();
    error = wsa == WSAEADDRINUSE || wsa == WSAEACCES ? EADDRINUSE : errno_of(wsa);
    ::closesocket(s);
    return kNoSocket;
  }
  return s;
}

int socket_local_port(NativeSocket s) {
  sockaddr_storage bound{};
  int len = sizeof bound;
  if (::getsockname(static_cast<SOCKET>(s), reinterpret_cast<sockaddr*>(&bound), &len) != 0) return 0;
  return ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

std::string port_holder(int port) {
  ULONG size = 0;
  ::GetExtendedTcpTable(nullptr, &size, FALSE, AF_INET, TCP_TABLE_OWNER_PID_LISTENER, 0);
  std::vector<unsigned char> buf(size);
  if (size == 0 || ::GetExtendedTcpTable(buf.data(), &size, FALSE, AF_INET, TCP_TABLE_OWNER_PID_LISTENER, 0) != NO_ERROR)
    return {};
  const auto* table = reinterpret_cast<const MIB_TCPTABLE_OWNER_PID*>(buf.data());
  for (DWORD i = 0; i < table->dwNumEntries; ++i) {
    const MIB_TCPROW_OWNER_PID& row = table->table[i];
    if (ntohs(static_cast<u_short>(row.dwLocalPort)) != port) continue;
    std::string out = "pid " + std::to_string(row.dwOwningPid);
    if (HANDLE h = ::OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, row.dwOwningPid)) {
      wchar_t name[MAX_PATH];
      DWORD n = MAX_PATH;
      if (::QueryFullProcessImageNameW(h, 0, name, &n)) {
        const std::u8string u8 = std::filesystem::path(std::wstring(name, n)).filename().u8string();
        out += " (" + std::string(u8.begin(), u8.end()) + ")";
      }
      ::CloseHandle(h);
    }
    return out;
  }
  return {};
}

NativeSocket socket_accept(NativeSocket listener) {
  const SOCKET s = ::accept(static_cast<SOCKET>(listener), nullptr, nullptr);
  if (s == INVALID_SOCKET) return kNoSocket;
  socket_no_inherit(s);
  return s;
}

NativeSocket connect_tcp(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return kNoSocket;
  SOCKET s = INVALID_SOCKET;
  for (auto* a = res; a; a = a->ai_next) {
    s = ::WSASocketW(a->ai_family, a->ai_socktype, a->ai_protocol, nullptr, 0, kFlags);
    if (s == INVALID_SOCKET) continue;
    if (::connect(s, a->ai_addr, static_cast<int>(a->ai_addrlen)) == 0) break;
    ::closesocket(s);
    s = INVALID_SOCKET;
  }
  ::freeaddrinfo(res);
  return s == INVALID_SOCKET ? kNoSocket : static_cast<NativeSocket>(s);
}

void socket_no_delay(NativeSocket s) {
  const BOOL one = TRUE;
  (void)::setsockopt(static_cast<SOCKET>(s), IPPROTO_TCP, TCP_NODELAY, reinterpret_cast<const char*>(&one), sizeof one);
}

int wait_readable(std::span<const NativeSocket> sockets) {
  std::vector<WSAPOLLFD> fds;
  for (NativeSocket s : sockets) fds.push_back({static_cast<SOCKET>(s), POLLRDNORM, 0});
  if (::WSAPoll(fds.data(), static_cast<ULONG>(fds.size()), -1) == SOCKET_ERROR) return -1;
  for (std::size_t i = 0; i < fds.size(); ++i)
    if (fds[i].revents) return static_cast<int>(i);
  return -1;
}

int socket_pair(NativeSocket (&ends)[2]) {
  SOCKET listener = ::WSASocketW(AF_INET, SOCK_STREAM, IPPROTO_TCP, nullptr, 0, kFlags);
  if (listener == INVALID_SOCKET) return errno_of(::WSAGetLastError());
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int len = sizeof addr;
  SOCKET a = INVALID_SOCKET, b = INVALID_SOCKET;
  int err = 0;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    err = errno_of(::WSAGetLastError());
  } else if ((a = ::WSASocketW(AF_INET, SOCK_STREAM, IPPROTO_TCP, nullptr, 0, kFlags)) == INVALID_SOCKET ||
             ::connect(a, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
             (b = ::accept(listener, nullptr, nullptr)) == INVALID_SOCKET) {
    err = errno_of(::WSAGetLastError());
  }
  ::closesocket(listener);
  if (err != 0) {
    if (a != INVALID_SOCKET) ::closesocket(a);
    return err;
  }
  // Only this process's connect can be accepted before the listener closes: both ends are ours
  // when their addresses mirror each other.
  sockaddr_in a_local{}, b_peer{};
  int al = sizeof a_local, bl = sizeof b_peer;
  if (::getsockname(a, reinterpret_cast<sockaddr*>(&a_local), &al) != 0 ||
      ::getpeername(b, reinterpret_cast<sockaddr*>(&b_peer), &bl) != 0 || a_local.sin_port != b_peer.sin_port) {
    ::closesocket(a);
    ::closesocket(b);
    return ECONNREFUSED;
  }
  const BOOL one = TRUE;
  ::setsockopt(a, IPPROTO_TCP, TCP_NODELAY, reinterpret_cast<const char*>(&one), sizeof one);
  ::setsockopt(b, IPPROTO_TCP, TCP_NODELAY, reinterpret_cast<const char*>(&one), sizeof one);
  ends[0] = a;
  ends[1] = b;
  return 0;
}

}  // namespace ferry::net

// The socket calls of socket_calls.hpp on POSIX sockets.
#include "common/socket_calls.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <vector>
#include <sstream>
#ifdef __linux__
#include <linux/sockios.h>
#endif

namespace ferry::net {

std::ptrdiff_t socket_recv(NativeSocket s, void* buffer, std::size_t length, int flags) {
  const ssize_t n = ::recv(s, buffer, length, flags);
  if (n >= 0) return n;
  return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

std::ptrdiff_t socket_send(NativeSocket s, const void* buffer, std::size_t length, bool dont_wait) {
  const ssize_t n = ::send(s, buffer, length, MSG_NOSIGNAL | (dont_wait ? MSG_DONTWAIT : 0));
  if (n >= 0) return n;
  return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

void socket_shutdown(NativeSocket s, ShutdownHow how) {
  ::shutdown(s, how == ShutdownHow::read ? SHUT_RD : how == ShutdownHow::write ? SHUT_WR : SHUT_RDWR);
}

void socket_close(NativeSocket s) { ::close(s); }

void socket_no_inherit(NativeSocket s) { ::fcntl(s, F_SETFD, FD_CLOEXEC); }

void socket_quick_ack([[maybe_unused]] NativeSocket s) {
#ifdef TCP_QUICKACK
  const int one = 1;
  (void)::setsockopt(s, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
#endif
}

bool socket_send_queue_empty([[maybe_unused]] NativeSocket s) {
#ifdef SIOCOUTQ
  int queued = 0;
  return ::ioctl(s, SIOCOUTQ, &queued) == 0 && queued == 0;
#else
  return true;
#endif
}

int socket_family(NativeSocket s) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  return ::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) == 0 ? addr.ss_family : -1;
}

NativeSocket socket_duplicate(NativeSocket s) { return ::fcntl(s, F_DUPFD_CLOEXEC, 0); }

NativeSocket listen_loopback(bool v6, int port, int& error) {
  const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = errno;
    return kNoSocket;
  }
  // TIME_WAIT leftovers of an earlier tunnel must not block the port (Linux never lets a second
  // listener share it this way).
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (rc != 0 || ::listen(fd, SOMAXCONN) != 0) {
    error = errno;
    ::close(fd);
    return kNoSocket;
  }
  return fd;
}

int socket_local_port(NativeSocket s) {
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  if (::getsockname(s, reinterpret_cast<sockaddr*>(&bound), &len) != 0) return 0;
  return ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

namespace {

// The inode of a socket listening on `port` (any address) in /proc/net/tcp or tcp6, or 0.
unsigned long listening_inode(int port) {
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, tr, retr, uid, timeout;
      unsigned long inode = 0;
      f >> sl >> local >> remote >> state >> queues >> tr >> retr >> uid >> timeout >> inode;
      auto colon = local.rfind(':');
      if (state != "0A" || colon == std::string::npos) continue;
      if (std::stoi(local.substr(colon + 1), nullptr, 16) == port) return inode;
    }
  }
  return 0;
}

}  // namespace

std::string port_holder(int port) {
  namespace fs = std::filesystem;
  unsigned long inode = listening_inode(port);
  if (!inode) return {};
  std::string target = "socket:[" + std::to_string(inode) + "]";
  std::error_code ec;
  for (const auto& proc : fs::directory_iterator("/proc", ec)) {
    std::string pid = proc.path().filename();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    for (const auto& fd : fs::directory_iterator(proc.path() / "fd", ec)) {
      std::error_code e2;
      if (fs::read_symlink(fd.path(), e2) != target) continue;
      std::ifstream comm(proc.path() / "comm");
      std::string name;
      std::getline(comm, name);
      return "pid " + pid + " (" + name + ")";
    }
  }
  return {};
}

NativeSocket socket_accept(NativeSocket listener) {
  for (;;) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0 || errno != EINTR) return fd < 0 ? kNoSocket : fd;
  }
}

NativeSocket connect_tcp(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return kNoSocket;
  int fd = kNoSocket;
  for (auto* a = res; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    ::close(fd);
    fd = kNoSocket;
  }
  ::freeaddrinfo(res);
  return fd;
}

void socket_no_delay(NativeSocket s) {
  const int one = 1;
  (void)::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int wait_readable(std::span<const NativeSocket> sockets) {
  std::vector<pollfd> fds;
  for (NativeSocket s : sockets) fds.push_back({s, POLLIN, 0});
  for (;;) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    for (std::size_t i = 0; i < fds.size(); ++i)
      if (fds[i].revents) return static_cast<int>(i);
  }
}

int socket_pair(NativeSocket (&ends)[2]) {
  return ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0 ? 0 : errno;
}

}  // namespace ferry::net

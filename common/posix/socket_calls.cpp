// The socket calls of socket_calls.hpp on POSIX sockets.
#include "common/socket_calls.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
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

int socket_pair(NativeSocket (&ends)[2]) {
  return ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0 ? 0 : errno;
}

}  // namespace ferry::net

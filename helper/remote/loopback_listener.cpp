// Loopback listening sockets for tunnels (loopback_listener.hpp).
#include "helper/remote/loopback_listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ferry::remote {
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

std::expected<LoopbackListener, std::string> LoopbackListener::open(const std::string& address, int port) {
  bool v6 = address == "::1";
  if (address != "127.0.0.1" && address != "localhost" && !v6)
    return std::unexpected("ferry binds tunnels to loopback only: use 127.0.0.1, not " + address);
  int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::unexpected(std::string("socket: ") + std::strerror(errno));
  int one = 1;
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
  std::string where = (v6 ? "[::1]:" : "127.0.0.1:") + std::to_string(port);
  if (rc != 0) {
    int err = errno;
    ::close(fd);
    if (err == EADDRINUSE) {
      std::string holder = port_holder(port);
      return std::unexpected("cannot listen on " + where + ": the port is in use" +
                             (holder.empty() ? "" : " by " + holder) + "; pick another local port (LPORT:HOST:RPORT) or 0 for any free one");
    }
    return std::unexpected("cannot listen on " + where + ": " + std::strerror(err));
  }
  if (::listen(fd, SOMAXCONN) != 0) {
    int err = errno;
    ::close(fd);
    return std::unexpected("cannot listen on " + where + ": " + std::strerror(err));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  LoopbackListener l;
  l.fd_ = fd;
  l.port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return l;
}

LoopbackListener::~LoopbackListener() { close(); }

LoopbackListener::LoopbackListener(LoopbackListener&& o) noexcept : fd_(o.fd_), port_(o.port_) { o.fd_ = -1; }

LoopbackListener& LoopbackListener::operator=(LoopbackListener&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    port_ = o.port_;
    o.fd_ = -1;
  }
  return *this;
}

void LoopbackListener::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace ferry::remote

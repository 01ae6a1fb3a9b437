// The agent's tcp/* methods: connect with a deadline, then a SocketPump per connection whose peer
// is the helper, reached by notifications on the agent's one frame writer.
#include "remote-runtime/agent/tcp_relay_methods.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <expected>
#include <string>

#include "common/socket_pump.hpp"
#include "common/unique_fd.hpp"
#include "protocol/messages.hpp"
#include "protocol/messages_tcp.hpp"

namespace ferry::agent {

namespace {

namespace ec = protocol::error_code;
using protocol::ResponseError;

constexpr int kConnectTimeoutMs = 5000;

// An address, or "localhost": the agent is static and looks no names up.
std::expected<sockaddr_storage, std::string> address_of(const std::string& host, int port, socklen_t& length) {
  sockaddr_storage ss{};
  const std::string h = host == "localhost" || host.empty() ? "127.0.0.1" : host;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, h.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(port));
    length = sizeof(sockaddr_in);
  } else if (std::string b = h.size() > 2 && h.front() == '[' && h.back() == ']' ? h.substr(1, h.size() - 2) : h;
             ::inet_pton(AF_INET6, b.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(port));
    length = sizeof(sockaddr_in6);
  } else {
    return std::unexpected("'" + host + "' is not an address (the agent looks no names up: give an IP address)");
  }
  return ss;
}

std::expected<posix::UniqueFd, std::string> connect_to(const std::string& host, int port) {
  socklen_t length = 0;
  auto addr = address_of(host, port, length);
  if (!addr) return std::unexpected(addr.error());
  posix::UniqueFd fd(::socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return std::unexpected(std::string("socket: ") + std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&*addr), length) != 0) {
    if (errno != EINPROGRESS) return std::unexpected(std::strerror(errno));
    pollfd p{fd.get(), POLLOUT, 0};
    if (::poll(&p, 1, kConnectTimeoutMs) != 1) return std::unexpected("no answer within 5 s");
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return std::unexpected(std::strerror(err));
  }
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // debugger and HTTP exchanges are small
  return fd;
}

SocketPump::Socket socket_calls(int fd) {
  return SocketPump::Socket{
      [fd](std::uint8_t* b, std::size_t n) -> std::ptrdiff_t {
        for (;;) {
          auto r = ::recv(fd, b, n, 0);
          if (r >= 0 || errno != EINTR) return r;
        }
      },
      [fd](std::span<const std::uint8_t> s) {
        while (!s.empty()) {
          auto r = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
          if (r < 0 && errno == EINTR) continue;
          if (r <= 0) return false;
          s = s.subspan(static_cast<std::size_t>(r));
        }
        return true;
      },
      [fd] { ::shutdown(fd, SHUT_WR); },
      [fd] { ::shutdown(fd, SHUT_RDWR); }};
}

}  // namespace

struct TcpRelayMethods::Conn {
  posix::UniqueFd fd;
  std::unique_ptr<SocketPump> pump;
};

void TcpRelayMethods::bind(protocol::BindingTable& table) {
  table.request<protocol::TcpConnectParams, protocol::TcpConnectResult>(
      protocol::method::kTcpConnect,
      [this](const protocol::TcpConnectParams& p, protocol::CallContext&) -> std::expected<protocol::TcpConnectResult, ResponseError> {
        reap();
        auto fd = connect_to(p.host, p.port);
        if (!fd) return std::unexpected(ResponseError{ec::kIoError, "connecting to " + p.host + ":" + std::to_string(p.port) + ": " + fd.error(), {}});
        auto conn = std::make_shared<Conn>();
        conn->fd = std::move(*fd);
        std::int64_t id = 0;
        {
          std::lock_guard lk(mutex_);
          id = next_id_++;
          conns_[id] = conn;
        }
        auto w = writer_;
        SocketPump::Peer peer{
            [w, id](std::span<const std::uint8_t> d) { return w->send_notification(std::string(protocol::method::kTcpData), protocol::tcp_data_params(id, d.data(), d.size())); },
            [w, id](std::uint64_t n) { return w->send_notification(std::string(protocol::method::kTcpAck), to_json(protocol::TcpAckParams{id, static_cast<std::int64_t>(n)})); },
            [w, id] { return w->send_notification(std::string(protocol::method::kTcpEof), to_json(protocol::TcpIdParams{id})); },
            [this, id] { finished(id); }};
        // Nothing is read before the helper's first tcp/ack: the connection's id reaches it in this
        // reply, which data sent now could overtake.
        conn->pump = std::make_unique<SocketPump>(socket_calls(conn->fd.get()), std::move(peer), /*granted=*/false);
        conn->pump->start();
        return protocol::TcpConnectResult{id};
      });
  table.notification<protocol::TcpDataParams>(protocol::method::kTcpData, [this](const protocol::TcpDataParams& p, protocol::CallContext&) {
    if (auto c = find(p.id)) c->pump->on_data(std::move(const_cast<protocol::TcpDataParams&>(p).data));
  });
  table.notification<protocol::TcpAckParams>(protocol::method::kTcpAck, [this](const protocol::TcpAckParams& p, protocol::CallContext&) {
    if (auto c = find(p.id)) c->pump->on_ack(static_cast<std::uint64_t>(p.bytes));
  });
  table.notification<protocol::TcpIdParams>(protocol::method::kTcpEof, [this](const protocol::TcpIdParams& p, protocol::CallContext&) {
    if (auto c = find(p.id)) c->pump->on_eof();
  });
  table.notification<protocol::TcpIdParams>(protocol::method::kTcpClose, [this](const protocol::TcpIdParams& p, protocol::CallContext&) {
    std::shared_ptr<Conn> c;
    {
      std::lock_guard lk(mutex_);
      if (auto it = conns_.find(p.id); it != conns_.end()) {
        c = it->second;
        conns_.erase(it);
      }
    }
    if (c) c->pump->stop();  // joined and closed as `c` goes, here: this is not a pump thread
  });
}

std::shared_ptr<TcpRelayMethods::Conn> TcpRelayMethods::find(std::int64_t id) {
  std::lock_guard lk(mutex_);
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second;
}

void TcpRelayMethods::finished(std::int64_t id) {
  std::lock_guard lk(mutex_);
  if (auto it = conns_.find(id); it != conns_.end()) {
    done_.push_back(std::move(it->second));
    conns_.erase(it);
  }
}

void TcpRelayMethods::reap() {
  std::vector<std::shared_ptr<Conn>> done;
  {
    std::lock_guard lk(mutex_);
    done.swap(done_);
  }
}

void TcpRelayMethods::close_all() {
  std::map<std::int64_t, std::shared_ptr<Conn>> conns;
  {
    std::lock_guard lk(mutex_);
    conns.swap(conns_);
  }
  for (auto& [id, c] : conns) c->pump->stop();
  conns.clear();
  reap();
}

std::size_t TcpRelayMethods::open_connections() {
  reap();
  std::lock_guard lk(mutex_);
  return conns_.size();
}

}  // namespace ferry::agent

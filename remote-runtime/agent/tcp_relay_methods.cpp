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
#include <thread>
#include <utility>

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

// A socket listening on `host` (loopback) at `port` (0: any free one), and the port it got.
std::expected<std::pair<posix::UniqueFd, int>, std::string> listen_on(const std::string& host, int port) {
  socklen_t length = 0;
  auto addr = address_of(host, port, length);
  if (!addr) return std::unexpected(addr.error());
  posix::UniqueFd fd(::socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return std::unexpected(std::string("socket: ") + std::strerror(errno));
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&*addr), length) != 0 || ::listen(fd.get(), 64) != 0)
    return std::unexpected(std::strerror(errno));
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len);
  const int got = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                     : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return std::pair{std::move(fd), got};
}

}  // namespace

struct TcpRelayMethods::Conn {
  posix::UniqueFd fd;
  std::unique_ptr<SocketPump> pump;
};

struct TcpRelayMethods::Listener {
  posix::UniqueFd fd;
  int wake[2] = {-1, -1};  // a byte here ends the accept loop
  std::thread thread;
  ~Listener() {
    if (wake[1] >= 0) (void)!::write(wake[1], "x", 1);
    if (thread.joinable()) thread.join();
    for (int w : wake)
      if (w >= 0) ::close(w);
  }
};

TcpRelayMethods::TcpRelayMethods(std::shared_ptr<run::FrameWriter> writer) : writer_(std::move(writer)) {}

TcpRelayMethods::~TcpRelayMethods() { close_all(); }

std::int64_t TcpRelayMethods::adopt(int raw_fd) {
  auto conn = std::make_shared<Conn>();
  conn->fd = posix::UniqueFd(raw_fd);
  std::int64_t id = 0;
  {
    std::lock_guard lk(mutex_);
    id = next_id_++;
  }
  auto w = writer_;
  SocketPump::Peer peer{
      [w, id](std::span<const std::uint8_t> d) { return w->send_notification(std::string(protocol::method::kTcpData), protocol::tcp_data_params(id, d.data(), d.size())); },
      [w, id](std::uint64_t n) { return w->send_notification(std::string(protocol::method::kTcpAck), to_json(protocol::TcpAckParams{id, static_cast<std::int64_t>(n)})); },
      [w, id] { return w->send_notification(std::string(protocol::method::kTcpEof), to_json(protocol::TcpIdParams{id})); },
      [this, w, id](bool clean) {
        // Cut short (the socket failed, the helper closed it): the helper's end stops too.
        if (!clean) w->send_notification(std::string(protocol::method::kTcpClose), to_json(protocol::TcpIdParams{id}));
        finished(id);
      }};
  // Nothing is read before the helper's first tcp/ack: the connection's id reaches it in a reply
  // or a tcp/accepted, which data sent now could overtake.
  conn->pump = std::make_unique<SocketPump>(native_socket_calls(conn->fd.get()), std::move(peer), /*granted=*/false);
  {
    std::lock_guard lk(mutex_);
    conns_[id] = conn;
  }
  conn->pump->start();
  return id;
}

void TcpRelayMethods::accept_loop(Listener& l) {
  for (;;) {
    pollfd fds[2] = {{l.fd.get(), POLLIN, 0}, {l.wake[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    const int c = ::accept4(l.fd.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    reap();
    const std::int64_t id = adopt(c);
    std::int64_t listener_id = 0;
    {
      std::lock_guard lk(mutex_);
      for (const auto& [lid, listener] : listeners_)
        if (listener.get() == &l) listener_id = lid;
    }
    writer_->send_notification(std::string(protocol::method::kTcpAccepted), to_json(protocol::TcpAcceptedParams{listener_id, id}));
  }
}

void TcpRelayMethods::close_listener(std::int64_t id) {
  std::unique_ptr<Listener> gone;
  {
    std::lock_guard lk(mutex_);
    if (auto it = listeners_.find(id); it != listeners_.end()) {
      gone = std::move(it->second);
      listeners_.erase(it);
    }
  }
}  // joined as `gone` goes, outside the lock (its loop takes it)

void TcpRelayMethods::bind(protocol::BindingTable& table) {
  table.request<protocol::TcpConnectParams, protocol::TcpConnectResult>(
      protocol::method::kTcpConnect,
      [this](const protocol::TcpConnectParams& p, protocol::CallContext&) -> std::expected<protocol::TcpConnectResult, ResponseError> {
        reap();
        auto fd = connect_to(p.host, p.port);
        if (!fd) return std::unexpected(ResponseError{ec::kIoError, "connecting to " + p.host + ":" + std::to_string(p.port) + ": " + fd.error(), {}});
        return protocol::TcpConnectResult{adopt(fd->release())};
      });
  table.request<protocol::TcpListenParams, protocol::TcpListenResult>(
      protocol::method::kTcpListen,
      [this](const protocol::TcpListenParams& p, protocol::CallContext&) -> std::expected<protocol::TcpListenResult, ResponseError> {
        auto fd = listen_on(p.host, p.port);
        if (!fd) return std::unexpected(ResponseError{ec::kIoError, "listening on " + p.host + ":" + std::to_string(p.port) + ": " + fd.error(), {}});
        auto l = std::make_unique<Listener>();
        l->fd = std::move(fd->first);
        if (::pipe2(l->wake, O_CLOEXEC) != 0) return std::unexpected(ResponseError{ec::kIoError, "pipe: " + std::string(std::strerror(errno)), {}});
        Listener* raw = l.get();
        std::int64_t id = 0;
        {
          std::lock_guard lk(mutex_);
          id = next_id_++;
          listeners_[id] = std::move(l);
        }
        raw->thread = std::thread([this, raw] { accept_loop(*raw); });
        return protocol::TcpListenResult{id, fd->second};
      });
  table.notification<protocol::TcpUnlistenParams>(protocol::method::kTcpUnlisten,
                                                  [this](const protocol::TcpUnlistenParams& p, protocol::CallContext&) { close_listener(p.listener_id); });
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
  std::map<std::int64_t, std::unique_ptr<Listener>> listeners;
  {
    std::lock_guard lk(mutex_);
    listeners.swap(listeners_);
  }
  listeners.clear();  // no accept adds a connection after this
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

// ssh -L over a Session, and the bridge bookkeeping both kinds of forward share (port_forward.hpp).
#include <utility>  // before asio on GCC 12

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "helper/ssh/port_forward.hpp"

namespace ferry::ssh {

using namespace std::chrono_literals;

namespace {

// The channel rides in the frame: release() suspends, and nobody else holds the channel by then.
asio::awaitable<void> release_channel(std::shared_ptr<Channel> channel) { co_await channel->release(Clock::now() + 5s); }

}  // namespace

void BridgeSet::add(const std::shared_ptr<Session>& session, std::shared_ptr<Channel> channel,
                    std::shared_ptr<StreamSocket> end, std::size_t buffer_bytes, std::shared_ptr<void> owner) {
  auto bridge = std::make_shared<Bridge>();
  bridge->channel = std::move(channel);
  bridge->end = std::move(end);
  live_.insert(bridge);
  ++counters_->live;
  // `owner` (the forward holding this set) stays alive until its last bridge ends.
  session->start_bridge(bridge->channel, bridge->end, buffer_bytes, [this, bridge, owner = std::move(owner)] {
    live_.erase(bridge);
    --counters_->live;
    boost::system::error_code ignored;
    bridge->end->close(ignored);
    asio::co_spawn(bridge->channel->session().executor(), release_channel(bridge->channel), [](std::exception_ptr) {});
  }, Session::ByteCount(counters_, &counters_->bytes));
}

void BridgeSet::close_all() {
  for (const auto& bridge : live_) {
    bridge->channel->interrupt();
    if (bridge->end->is_open()) {
      net::socket_shutdown(bridge->end->native_handle(), net::ShutdownHow::both);
      boost::system::error_code ignored;
      bridge->end->cancel(ignored);
    }
  }
}

LocalForward::LocalForward(std::shared_ptr<Session> session, std::string host, int port, ForwardTuning tuning)
    : session_(std::move(session)), host_(std::move(host)), port_(port), tuning_(tuning), acceptor_(session_->executor()) {}

Result<std::shared_ptr<LocalForward>> LocalForward::start(std::shared_ptr<Session> session, net::NativeSocket listen_fd,
                                                          std::string host,
                                                          int port, ForwardTuning tuning,
                                                          std::shared_ptr<ConnectionHandoff> handoff) {
  if (!session->is_open()) return std::unexpected(make_error(Errc::kClosed, "forwarding: " + session->close_reason()));
  const int family = net::socket_family(listen_fd);
  if (family != AF_INET && family != AF_INET6)
    return std::unexpected(make_error(Errc::kConnectFailed, "forwarding: the listening socket is not usable"));
  const net::NativeSocket fd = net::socket_duplicate(listen_fd);
  if (fd == net::kNoSocket) return std::unexpected(make_error(Errc::kConnectFailed, "forwarding: dup failed"));
  auto self = std::make_shared<LocalForward>(std::move(session), std::move(host), port, tuning);
  self->handoff_ = std::move(handoff);
  boost::system::error_code ec;
  auto protocol = family == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4();
  self->acceptor_.assign(protocol, fd, ec);
  if (ec) {
    net::socket_close(fd);
    return std::unexpected(make_error(Errc::kConnectFailed, "forwarding: " + ec.message()));
  }
  self->acceptor_.non_blocking(true, ec);
  self->bound_port_ = self->acceptor_.local_endpoint(ec).port();
  asio::co_spawn(self->session_->executor(), self->accept_loop(self), [](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      spdlog::warn("ssh: a local forward's accept loop ended with an exception: {}", x.what());
    }
  });
  std::weak_ptr<LocalForward> weak = self;
  self->session_->add_close_hook([weak] {
    if (auto f = weak.lock()) f->stop();
  });
  return self;
}

void LocalForward::stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  bridges_.close_all();
  if (handoff_) handoff_->stop();
}

asio::awaitable<void> LocalForward::accept_loop(std::shared_ptr<LocalForward> self) {
  while (!stopped_) {
    boost::system::error_code ec;
    auto sock = std::make_shared<StreamSocket>(session_->executor());
    co_await acceptor_.async_accept(*sock, asio::redirect_error(asio::use_awaitable, ec));
    if (stopped_) break;
    if (ec) {
      if (ec == asio::error::connection_aborted) continue;
      spdlog::warn("ssh: forward to {}:{}: accept failed: {}", host_, port_, ec.message());
      break;
    }
    sock->set_option(asio::ip::tcp::no_delay(true), ec);
    if (handoff_) {
      // The handoff takes the bare socket (a POSIX descriptor the OpenSSH master is handed); one it
      // declines is adopted back.
      const net::NativeSocket fd = sock->release(ec);
      if (ec) continue;
      if (handoff_->take(fd, counters_)) continue;
      *sock = adopt_stream_socket(session_->executor(), fd, ec);
      if (ec) continue;
    }
    asio::co_spawn(session_->executor(), serve(std::move(sock), self), [](std::exception_ptr) {});
  }
}

asio::awaitable<void> LocalForward::serve(std::shared_ptr<StreamSocket> sock, std::shared_ptr<LocalForward> self) {
  ++counters_->accepted;
  auto ch = co_await session_->open_direct_tcpip(host_, port_, Clock::now() + 15s, tuning_.window_bytes);
  if (!ch) {
    ++counters_->failed;
    spdlog::warn("ssh: forwarded connection to {}:{} refused: {}", host_, port_, ch.error().message);
    co_return;
  }
  if (stopped_) {
    co_await (*ch)->release(Clock::now() + 5s);
    co_return;
  }
  bridges_.add(session_, std::move(*ch), std::move(sock), tuning_.buffer_bytes, self);
}

}  // namespace ferry::ssh

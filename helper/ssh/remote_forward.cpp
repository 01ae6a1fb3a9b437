// ssh -R over a Session (port_forward.hpp): the server listens on its loopback and each connection
// it reports becomes a bridge to a local port here.
#include <utility>  // before asio on GCC 12

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "helper/ssh/port_forward.hpp"

namespace ferry::ssh {

using namespace std::chrono_literals;

RemoteForward::RemoteForward(std::shared_ptr<Session> session, std::string local_host, int local_port, ForwardTuning tuning)
    : session_(std::move(session)), local_host_(std::move(local_host)), local_port_(local_port), tuning_(tuning) {}

asio::awaitable<Result<std::shared_ptr<RemoteForward>>> RemoteForward::start(std::shared_ptr<Session> session,
                                                                              std::string bind_host, int port,
                                                                              std::string local_host, int local_port,
                                                                              Clock::time_point deadline,
                                                                              ForwardTuning tuning) {
  auto self = std::make_shared<RemoteForward>(session, std::move(local_host), local_port, tuning);
  int bound = 0;
  auto listener = co_await session->forward_listen(bind_host, port, &bound, deadline);
  if (!listener) {
    auto err = listener.error();
    err.message += " (the port may be in use there, or the server forbids remote forwarding: AllowTcpForwarding)";
    co_return std::unexpected(err);
  }
  self->listener_ = *listener;
  self->bound_port_ = port != 0 ? port : bound;
  asio::co_spawn(session->executor(), self->accept_loop(self), [](std::exception_ptr e) {
    if (e) spdlog::warn("ssh: a remote forward's accept loop ended with an exception");
  });
  std::weak_ptr<RemoteForward> weak = self;
  session->add_close_hook([weak] {
    if (auto f = weak.lock()) f->stop();
  });
  co_return self;
}

void RemoteForward::stop() {
  if (stopped_) return;
  stopped_ = true;
  session_->wake();  // the accept loop sees stopped_ and cancels the listener
  bridges_.close_all();
}

asio::awaitable<void> RemoteForward::accept_loop(std::shared_ptr<RemoteForward> self) {
  while (!stopped_) {
    auto ch = session_->poll_forward_accept(listener_);
    if (!ch) {
      if (!stopped_) spdlog::warn("ssh: remote forward {}: {}", bound_port_, ch.error().message);
      break;
    }
    if (*ch) {
      asio::co_spawn(session_->executor(), serve(std::move(*ch), self), [](std::exception_ptr) {});
      continue;
    }
    auto w = co_await session_->wait_socket(Clock::time_point::max(), "waiting for forwarded connections");
    if (!w) break;
  }
  // Cancelling frees the listener; a closed session frees it with itself.
  if (session_->is_open()) (void)co_await session_->forward_cancel(listener_, Clock::now() + 5s);
  listener_ = nullptr;
}

asio::awaitable<void> RemoteForward::serve(std::shared_ptr<Channel> channel, std::shared_ptr<RemoteForward> self) {
  ++counters_->accepted;
  auto executor = session_->executor();
  boost::system::error_code ec;
  asio::ip::tcp::resolver resolver(executor);
  auto targets = co_await resolver.async_resolve(local_host_, std::to_string(local_port_),
                                                 asio::redirect_error(asio::use_awaitable, ec));
  // The deadline's handler may run after the connect completed (or this coroutine ended): it
  // holds the attempt's socket itself.
  auto sock = std::make_shared<StreamSocket>(executor);
  if (!ec) {
    ec = asio::error::host_not_found;
    for (const auto& target : targets) {
      sock = std::make_shared<StreamSocket>(executor);
      auto connected = std::make_shared<bool>(false);
      asio::steady_timer timer(executor, 10s);
      timer.async_wait([sock, connected](boost::system::error_code e) {
        if (!e && !*connected) {
          boost::system::error_code ignored;
          sock->close(ignored);
        }
      });
      const asio::generic::stream_protocol::endpoint to(target.endpoint().data(), target.endpoint().size(), IPPROTO_TCP);
      co_await sock->async_connect(to, asio::redirect_error(asio::use_awaitable, ec));
      *connected = !ec && sock->is_open();
      timer.cancel();
      if (*connected) break;
      if (!ec) ec = asio::error::timed_out;
    }
  }
  if (ec || stopped_) {
    if (ec) {
      ++counters_->failed;
      spdlog::warn("ssh: reverse forward: cannot connect to {}:{} here: {}", local_host_, local_port_, ec.message());
    }
    co_await channel->release(Clock::now() + 5s);  // the remote client sees its connection close
    co_return;
  }
  sock->set_option(asio::ip::tcp::no_delay(true), ec);
  bridges_.add(session_, std::move(channel), std::move(sock), tuning_.buffer_bytes, self);
}

}  // namespace ferry::ssh

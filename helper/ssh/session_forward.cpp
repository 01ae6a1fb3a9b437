// Forwarding on a session: direct-tcpip channels (local forwards, ProxyJump hops), tcpip-forward
// listeners (remote forwards), and the bridge that pumps a channel to a local socket both ways.
#include <utility>  // before asio on GCC 12


#include <cerrno>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "helper/ssh/session.hpp"
#include "helper/ssh/session_internal.hpp"

namespace ferry::ssh {

using asio::use_awaitable;
using namespace std::chrono_literals;

asio::awaitable<Result<std::shared_ptr<Channel>>> Session::open_direct_tcpip(std::string host, int port,
                                                                             Clock::time_point deadline,
                                                                             std::uint32_t window_bytes) {
  if (auto turn = co_await lock_open(deadline); !turn) co_return std::unexpected(turn.error());
  OpenTurn turn(*this);
  std::string what = "opening a direct-tcpip channel to " + host + ":" + std::to_string(port);
  if (window_bytes != 0) window_bytes = receive_window(window_bytes);
  if (window_bytes == 0) {
    auto ch = co_await retry_ptr<LIBSSH2_CHANNEL>(
        *this, [&] { return libssh2_channel_direct_tcpip_ex(session_, host.c_str(), port, "127.0.0.1", 0); }, deadline,
        what);
    if (!ch) co_return std::unexpected(ch.error());
    co_return std::make_shared<Channel>(shared_from_this(), *ch);
  }
  // RFC 4254 7.2: string host, uint32 port, string originator address, uint32 originator port; the
  // same message libssh2_channel_direct_tcpip_ex builds, with our window.
  std::string message;
  auto put_u32 = [&](std::uint32_t v) {
    for (int shift : {24, 16, 8, 0}) message += static_cast<char>((v >> shift) & 0xff);
  };
  auto put_str = [&](std::string_view v) {
    put_u32(static_cast<std::uint32_t>(v.size()));
    message += v;
  };
  put_str(host);
  put_u32(static_cast<std::uint32_t>(port));
  put_str("127.0.0.1");
  put_u32(0);
  auto ch = co_await retry_ptr<LIBSSH2_CHANNEL>(
      *this,
      [&] {
        return libssh2_channel_open_ex(session_, "direct-tcpip", sizeof("direct-tcpip") - 1, window_bytes,
                                       LIBSSH2_CHANNEL_PACKET_DEFAULT, message.data(),
                                       static_cast<unsigned>(message.size()));
      },
      deadline, what);
  if (!ch) co_return std::unexpected(ch.error());
  co_return std::make_shared<Channel>(shared_from_this(), *ch);
}

asio::awaitable<Result<LIBSSH2_LISTENER*>> Session::forward_listen(std::string bind_host, int port, int* bound_port,
                                                                   Clock::time_point deadline) {
  // tcpip-forward is a global request with its own state in libssh2, not the channel-open one.
  co_return co_await retry_ptr<LIBSSH2_LISTENER>(
      *this, [&] { return libssh2_channel_forward_listen_ex(session_, bind_host.c_str(), port, bound_port, 64); },
      deadline, "asking the server to listen on " + bind_host + ":" + std::to_string(port));
}

Result<std::shared_ptr<Channel>> Session::poll_forward_accept(LIBSSH2_LISTENER* listener) {
  if (closed_) return std::unexpected(make_error(Errc::kClosed, "accepting a forwarded connection: " + close_reason_));
  auto* ch = libssh2_channel_forward_accept(listener);
  if (ch) return std::make_shared<Channel>(shared_from_this(), ch);
  int e = libssh2_session_last_errno(session_);
  if (e == LIBSSH2_ERROR_EAGAIN || e == LIBSSH2_ERROR_BAD_USE) return std::shared_ptr<Channel>{};
  return std::unexpected(last_error("accepting a forwarded connection"));
}

asio::awaitable<Result<void>> Session::forward_cancel(LIBSSH2_LISTENER* listener, Clock::time_point deadline) {
  auto r = co_await retry(*this, [&] { return static_cast<long>(libssh2_channel_forward_cancel(listener)); }, deadline,
                          "cancelling a remote forward");
  if (!r) co_return std::unexpected(r.error());
  co_return Result<void>{};
}

void Session::start_bridge(std::shared_ptr<Channel> channel, std::shared_ptr<StreamSocket> end, std::size_t buffer_bytes,
                           std::function<void()> on_done, ByteCount moved) {
  // Both directions share one completion: the second to end runs on_done.
  auto remaining = std::make_shared<int>(2);
  auto finish = [remaining, on_done = std::move(on_done)](std::exception_ptr e) {
    if (e) spdlog::warn("ssh: a channel bridge ended with an exception");
    if (--*remaining == 0 && on_done) on_done();
  };
  asio::co_spawn(executor_, bridge_loop(channel, end, buffer_bytes, moved), finish);
  asio::co_spawn(executor_, bridge_up(channel, end, buffer_bytes, moved), finish);
}

asio::awaitable<void> Session::bridge_loop(std::shared_ptr<Channel> channel,
                                           std::shared_ptr<StreamSocket> end, std::size_t buffer_bytes,
                                           ByteCount moved) {
  // channel -> socket. Parameters, not lambda captures: they live in this coroutine's own frame.
  auto self = shared_from_this();
  std::vector<char> buf(buffer_bytes);
  for (;;) {
    auto n = co_await channel->read_some(buf, Clock::time_point::max());
    if (!n || *n == 0) {
      if (!n || channel->eof()) {
        // EOF from the far side ends only our writing half; an error ends the socket.
        if (end->is_open()) net::socket_shutdown(end->native_handle(), n ? net::ShutdownHow::write : net::ShutdownHow::both);
        co_return;
      }
      continue;
    }
    if (moved) *moved += *n;
    // A burst usually fits the socket's buffer: send it now rather than through the reactor, whose
    // completion costs another round on the strand; when it does not, wait until the socket takes
    // more. Always net::socket_send (MSG_NOSIGNAL), never write(): a client that closed (a port probe,
    // a browser tab) must be an EPIPE for this connection, not a SIGPIPE that kills the process (issue #17).
    boost::system::error_code ec;
    for (std::size_t sent = 0; sent < *n;) {
      const auto w = net::socket_send(end->native_handle(), buf.data() + sent, *n - sent, true);
      if (w > 0) {
        sent += static_cast<std::size_t>(w);
      } else if (w == -EAGAIN) {
        co_await end->async_wait(StreamSocket::wait_write, asio::redirect_error(use_awaitable, ec));
        if (ec) break;
      } else if (w == -EINTR) {
        continue;
      } else {
        ec = boost::system::error_code(w < 0 ? static_cast<int>(-w) : EPIPE, boost::system::generic_category());
        break;
      }
    }
    if (ec) {
      channel->interrupt();  // the other direction stops writing into a dead connection
      if (end->is_open()) net::socket_shutdown(end->native_handle(), net::ShutdownHow::both);
      co_return;
    }
  }
}

asio::awaitable<void> Session::bridge_up(std::shared_ptr<Channel> channel,
                                         std::shared_ptr<StreamSocket> end, std::size_t buffer_bytes,
                                         ByteCount moved) {
  // socket -> channel.
  auto self = shared_from_this();
  std::vector<char> buf(buffer_bytes);
  for (;;) {
    boost::system::error_code ec;
    auto n = co_await end->async_read_some(asio::buffer(buf), asio::redirect_error(use_awaitable, ec));
    if (ec || n == 0) {
      if (ec && ec != asio::error::eof) channel->interrupt();  // a reset, not a half-close: end both ways
      else if (is_open()) co_await channel->send_eof(Clock::now() + 5s);
      co_return;
    }
    if (moved) *moved += n;
    auto w = co_await channel->write_all(std::string_view(buf.data(), n), Clock::time_point::max());
    if (!w) {
      channel->interrupt();
      if (end->is_open()) net::socket_shutdown(end->native_handle(), net::ShutdownHow::both);
      co_return;
    }
  }
}

}  // namespace ferry::ssh

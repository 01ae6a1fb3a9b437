// Session keepalives: libssh2's keepalive sent when the send queue is empty, an idle channel that
// pumps the transport, and the dead-link verdict when nothing has arrived for interval * count.
#include <utility>  // before asio on GCC 12


#include <algorithm>
#include <array>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "helper/ssh/session.hpp"
#include "helper/ssh/session_internal.hpp"

namespace ferry::ssh {

using asio::use_awaitable;
using namespace std::chrono_literals;

void Session::start_keepalive(std::chrono::milliseconds interval, int count_max, std::function<void(const Error&)> on_dead) {
  on_dead_ = std::move(on_dead);
  // libssh2 counts keepalive intervals in whole seconds of time() and treats 1 as 2.
  auto seconds = std::max<long>(2, static_cast<long>((interval.count() + 999) / 1000));
  libssh2_keepalive_config(session_, 1, static_cast<unsigned>(seconds));
  interval = std::chrono::seconds(seconds);
  asio::co_spawn(executor_, keepalive_loop(interval, std::max(1, count_max)), [](std::exception_ptr e) {
    if (e) spdlog::warn("ssh: keepalive loop ended with an exception");
  });
}

asio::awaitable<void> Session::open_pump_channel(Clock::time_point deadline) {
  auto self = shared_from_this();
  if (auto turn = co_await lock_open(deadline); !turn) co_return;
  OpenTurn turn(*this);
  auto pump = co_await retry_ptr<LIBSSH2_CHANNEL>(
      *this, [&] { return libssh2_channel_open_session(session_); }, deadline, "opening the keepalive channel");
  if (pump && !closed_) pump_channel_ = std::make_shared<Channel>(self, *pump);
  else spdlog::debug("ssh: no keepalive channel ({}); relying on other readers", pump.error().message);
}

asio::awaitable<void> Session::keepalive_loop(std::chrono::milliseconds interval, int count_max) {
  auto self = shared_from_this();
  auto limit = interval * count_max;
  // Keepalive replies only count once libssh2 reads them, and it reads only inside channel calls; an
  // idle session channel (no command) lets this loop pump the transport when nobody else reads.
  // It opens alongside the loop: a link that dies meanwhile must still be noticed in time.
  asio::co_spawn(executor_, open_pump_channel(Clock::now() + limit), [](std::exception_ptr) {});
  // Check often, so the bound is limit plus a fraction of a second, not limit plus an interval.
  auto tick = std::min<std::chrono::milliseconds>(interval, 250ms);
  keepalive_timer_ = std::make_shared<asio::steady_timer>(executor_);
  auto timer_ref = keepalive_timer_;
  auto& timer = *timer_ref;
  std::array<char, 256> sink{};
  while (!closed_) {
    timer.expires_after(tick);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
    if (closed_) break;
    rx_drained_ = false;  // this loop reads without waiting on the socket first
    int next = 0;
    // libssh2 sends only when its interval has passed. A keepalive that hit EAGAIN would stay half
    // sent with nobody to finish it (and block every other send), so it goes only when the kernel's
    // send queue is empty and the small packet is sure to fit; a full queue means the link is busy.
    if (net::socket_send_queue_empty(socket_.native_handle())) libssh2_keepalive_send(session_, &next);
    if (pump_channel_) libssh2_channel_read_ex(pump_channel_->raw(), 0, sink.data(), sink.size());
    if (Clock::now() - last_rx_ > limit) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_rx_).count();
      Error err = make_error(Errc::kLinkDead, "no reply from " + describe(host_) + " for " + std::to_string(ms) +
                                                  " ms (keepalive every " + std::to_string(interval.count()) + " ms, " +
                                                  std::to_string(count_max) + " missed)");
      spdlog::warn("ssh: {}", err.message);
      close(err.message);
      if (on_dead_) on_dead_(err);
      break;
    }
  }
  pump_channel_.reset();
}

}  // namespace ferry::ssh

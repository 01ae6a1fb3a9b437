// Session's lifecycle (see session.hpp): construction and teardown, close and its hooks, errors
// from libssh2's last error, the channel-open turn, and the receive-window sizing. The rest is
// split by concern: session_io (socket hooks and waits), session_channel (Channel),
// session_connect and session_auth (connect, handshake, host key, auth, jump chain),
// session_exec, session_forward, session_sftp and session_keepalive.
#include "helper/ssh/session.hpp"


#include <algorithm>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "helper/ssh/session_internal.hpp"

namespace ferry::ssh {

using asio::use_awaitable;

std::uint32_t receive_window_for(Clock::duration rtt, std::uint32_t floor_bytes) {
  if (rtt < kMinWindowRtt) return floor_bytes;
  const double bdp = std::chrono::duration<double>(rtt).count() * kWindowRate;
  if (bdp <= floor_bytes) return floor_bytes;
  return bdp >= kMaxWindow ? std::max(kMaxWindow, floor_bytes) : static_cast<std::uint32_t>(bdp);
}

std::string libssh2_version() {
  const char* v = ::libssh2_version(0);
  return v ? v : "?";
}

asio::awaitable<Result<void>> Session::lock_open(Clock::time_point deadline) {
  if (!open_busy_) {
    open_busy_ = true;
    co_return Result<void>{};
  }
  auto turn = std::make_shared<asio::steady_timer>(executor_, deadline);
  open_waiters_.push_back(turn);
  boost::system::error_code ec;
  co_await turn->async_wait(asio::redirect_error(use_awaitable, ec));
  if (ec == asio::error::operation_aborted) co_return Result<void>{};  // unlock_open handed us the turn
  std::erase(open_waiters_, turn);
  co_return std::unexpected(timeout_error("waiting to open a channel"));
}

void Session::unlock_open() {
  if (!open_waiters_.empty()) {
    auto next = open_waiters_.front();
    open_waiters_.pop_front();
    next->cancel();  // the turn passes straight to the next waiter
    return;
  }
  open_busy_ = false;
}

Session::Session(Executor executor, HostConfig host, SessionOptions options)
    : executor_(executor), host_(std::move(host)), options_(std::move(options)), socket_(executor), cap_timer_(executor) {}

Session::~Session() {
  if (session_) {
    if (socket_.is_open()) net::socket_shutdown(socket_.native_handle(), net::ShutdownHow::both);
    // Every I/O now fails at once, so blocking mode cannot hang; it lets libssh2 free everything.
    libssh2_session_set_blocking(session_, 1);
    // Blocking libssh2 polls and then recv()s: a remembered EAGAIN would spin it forever.
    rx_drained_ = false;
    rx_blocking_ = true;
    libssh2_session_free(session_);
  }
  boost::system::error_code ec;
  socket_.close(ec);
}

void Session::note_open_time(Clock::time_point started) {
  // sshd confirms a session channel at once, so the open is one round trip plus a little work;
  // the shortest seen is the closest to the link's own.
  const Clock::rep took = (Clock::now() - started).count();
  if (rtt_ticks_.load() == 0 || took < rtt_ticks_.load()) rtt_ticks_ = std::max<Clock::rep>(took, 1);
}

Error Session::last_error(std::string_view what) const {
  if (closed_) return make_error(Errc::kClosed, std::string(what) + ": " + close_reason_);
  char* msg = nullptr;
  int len = 0;
  int code = session_ ? libssh2_session_last_error(session_, &msg, &len, 0) : LIBSSH2_ERROR_SOCKET_DISCONNECT;
  std::string text = msg && len > 0 ? std::string(msg, static_cast<std::size_t>(len)) : libssh2_category().message(code);
  if (code == LIBSSH2_ERROR_SOCKET_DISCONNECT || code == LIBSSH2_ERROR_SOCKET_RECV || code == LIBSSH2_ERROR_SOCKET_SEND)
    return Error{make_error_code(Errc::kClosed), std::string(what) + ": " + text};
  return Error{libssh2_error(code), std::string(what) + ": " + text};
}

void Session::close(std::string why) {
  if (closed_) return;
  closed_ = true;
  close_reason_ = why;
  // The hops below carry only this session: they go with it (their bridges end too).
  if (jump_) jump_->close(why);
  if (keepalive_timer_) keepalive_timer_->cancel();
  cap_timer_.cancel();
  auto hooks = std::move(close_hooks_);
  for (auto& hook : hooks) hook();
  if (socket_.is_open()) {
    net::socket_shutdown(socket_.native_handle(), net::ShutdownHow::both);
    boost::system::error_code ignored;
    socket_.cancel(ignored);
  }
}

void Session::add_close_hook(std::function<void()> hook) {
  if (closed_) hook();
  else close_hooks_.push_back(std::move(hook));
}

}  // namespace ferry::ssh

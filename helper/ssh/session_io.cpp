// The session's socket under libssh2: the recv/send hooks (read-ahead, remembered EAGAIN, stalled
// sends), wait_socket (readiness under a deadline), wakes, and the half-sent window adjust that
// every sender finishes first. All on the session's strand.
#include <utility>  // before asio on GCC 12

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "helper/ssh/session.hpp"
#include "helper/ssh/session_internal.hpp"

namespace ferry::ssh {

using asio::use_awaitable;
using namespace std::chrono_literals;

std::ptrdiff_t Session::recv_hook(net::NativeSocket socket, void* buffer, std::size_t length, int flags, void** abstract) {
  auto* self = static_cast<Session*>(*abstract);
  // libssh2 talks to ssh-agent through this hook too, on the agent's own (blocking) socket: none
  // of the SSH socket's read-ahead or remembered EAGAIN applies there (a remembered EAGAIN made
  // agent auth fail with "cannot list keys").
  if (socket != self->socket_.native_handle()) {
    return net::socket_recv(socket, buffer, length, flags);
  }
  auto& ahead = self->rx_ahead_;
  // libssh2 asks for at most 16 KiB at a time, so a 32 KiB packet took two or three recv()s. Reading
  // ahead into the session's buffer takes the socket's whole backlog in one call; libssh2's asks
  // are then copies. Bytes held here are like bytes in libssh2's own buffer: libssh2 only reports
  // EAGAIN after this hook did, i.e. with this buffer empty, so waiting on the socket stays right.
  if (self->rx_begin_ == self->rx_end_) {
    // libssh2 drains the transport until EAGAIN on every channel call, several times per round
    // trip. Once the socket said EAGAIN, say it again without asking until a wait on the socket
    // ends ready (wait_socket), a wait's timer fires, or a keepalive tick: whoever gets this
    // EAGAIN waits on the socket, and asio re-arms the edge-triggered registration
    // (EPOLL_CTL_MOD) when a wait starts, so bytes that came meanwhile end that wait at once.
    if (self->rx_drained_ && !self->rx_blocking_) return -EAGAIN;
    if (ahead.empty()) ahead.resize(kReadAheadBytes);
    const std::ptrdiff_t n = net::socket_recv(socket, ahead.data(), ahead.size(), flags);
    if (n < 0) {
      if (n == -EAGAIN && !self->rx_blocking_) self->rx_drained_ = true;
      return n;
    }
    if (n == 0) return 0;
    // ACK at once, not up to 40 ms later: sshd sends without TCP_NODELAY until a session's
    // command starts, so a small packet right after another (the first channel open's
    // confirmation) waited for this side's delayed ACK. Channel opens time the link, so loopback
    // and LANs were timed at 40+ ms and got long-link windows and bulk lanes
    // (test_ssh_session). Linux leaves quick-ACK mode by itself: asked again after each read.
    net::socket_quick_ack(socket);
    // A short read emptied the kernel's queue (TCP copies until the queue and its backlog are
    // empty or the buffer is full), so the next recv() would say EAGAIN: remember that now
    // rather than ask, which cost one recv() per packet burst. Bytes arriving later end the next
    // wait at once (the wait re-arms the registration), which resets this.
    if (static_cast<std::size_t>(n) < ahead.size() && !self->rx_blocking_) self->rx_drained_ = true;
    self->rx_begin_ = 0;
    self->rx_end_ = static_cast<std::size_t>(n);
    self->last_rx_ = Clock::now();
    // Whatever arrived may hold packets for channels other than the caller's, and their
    // coroutines wait for socket readiness that this read consumed: wake them to look (they run
    // after the current call, on the strand). One posted wake per burst, not one cancel per recv.
    // With nobody waiting there is nobody to wake: a coroutine that waits later calls libssh2
    // first and finds its packets (the caller included, so a lone echo pays no spurious wake).
    if (self->waiters_ > 0 && !self->wake_posted_) {
      self->wake_posted_ = true;
      asio::post(self->executor_, [weak = self->weak_from_this()] {
        if (auto s = weak.lock()) {
          s->wake_posted_ = false;
          s->wake();
        }
      });
    }
  }
  std::size_t n = std::min(length, self->rx_end_ - self->rx_begin_);
  std::memcpy(buffer, ahead.data() + self->rx_begin_, n);
  self->rx_begin_ += n;
  return static_cast<std::ptrdiff_t>(n);
}

std::ptrdiff_t Session::send_hook(net::NativeSocket socket, const void* buffer, std::size_t length, int /*flags*/,
                                  void** abstract) {
  auto* self = static_cast<Session*>(*abstract);
  const std::ptrdiff_t n = net::socket_send(socket, buffer, length);
  if (socket != self->socket_.native_handle()) return n;  // ssh-agent's socket
  if (n < 0) {
    if (n == -EAGAIN) self->send_stalled_ = true;
    else self->send_failed_ = true;
    return n;
  }
  if (static_cast<std::size_t>(n) < length) {
    self->send_stalled_ = true;
  } else if (self->send_stalled_) {
    // The half-sent packet went out: coroutines turned away with BAD_USE may send now, and they
    // wait on readiness that this send does not signal.
    self->send_stalled_ = false;
    self->wake();
  }
  return n;
}

asio::awaitable<Result<void>> Session::wait_socket(Clock::time_point deadline, std::string_view what) {
  if (closed_) co_return std::unexpected(make_error(Errc::kClosed, std::string(what) + ": " + close_reason_));
  auto now = Clock::now();
  if (now >= deadline) co_return std::unexpected(timeout_error(what));
  int dirs = session_ ? libssh2_session_block_directions(session_) : LIBSSH2_SESSION_BLOCK_INBOUND;
  auto kind = (dirs & LIBSSH2_SESSION_BLOCK_OUTBOUND) ? StreamSocket::wait_write : StreamSocket::wait_read;
  // A cap guards against a readiness edge lost between libssh2's EAGAIN and this wait: the worst case
  // is one spurious retry per second. Waits without a near deadline (the bridges') share one
  // session timer rather than arming and cancelling one each, which cost every round trip.
  std::shared_ptr<asio::steady_timer> timer;
  if (deadline - now < 1s) {
    timer = std::make_shared<asio::steady_timer>(executor_, deadline);
    timer->async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec && !self->closed_) {
        boost::system::error_code ignored;
        self->rx_drained_ = false;
        self->socket_.cancel(ignored);  // wakes every waiter; each simply retries its libssh2 call
      }
    });
  } else if (!cap_armed_) {
    cap_armed_ = true;
    cap_timer_.expires_at(now + 1s);
    cap_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      auto self = weak.lock();
      if (!self) return;
      self->cap_armed_ = false;
      if (!ec && !self->closed_ && self->waiters_ > 0) {
        boost::system::error_code ignored;
        self->rx_drained_ = false;  // the safety net asks the socket itself
        self->socket_.cancel(ignored);
      }
    });
  }
  struct Waiting {
    int& count;
    explicit Waiting(int& c) : count(c) { ++count; }
    ~Waiting() { --count; }
  } waiting(waiters_);
  boost::system::error_code ec;
  co_await socket_.async_wait(kind, asio::redirect_error(use_awaitable, ec));
  if (!ec) rx_drained_ = false;  // the socket is ready; a wake (cancel) says nothing about the socket
  if (timer) timer->cancel();
  if (closed_) co_return std::unexpected(make_error(Errc::kClosed, std::string(what) + ": " + close_reason_));
  if (ec && ec != asio::error::operation_aborted)
    co_return std::unexpected(make_error(Errc::kClosed, std::string(what) + ": " + ec.message()));
  if (Clock::now() >= deadline) co_return std::unexpected(timeout_error(what));
  co_return Result<void>{};
}

void Session::finish_pending_adjust() {
  if (pending_adjust_ && send_stalled_) pending_adjust_->finish_adjust();
}

void Session::forget_pending_adjust(const Channel* channel) {
  if (pending_adjust_ == channel) pending_adjust_ = nullptr;
}

bool Session::spurious_send_error(long rc) const {
  return rc == LIBSSH2_ERROR_SOCKET_SEND && !send_failed_ && !closed_;
}

void Session::wake() {
  boost::system::error_code ignored;
  if (socket_.is_open()) socket_.cancel(ignored);
}

}  // namespace ferry::ssh

// Channel: reads that keep libssh2 from adjusting the receive window itself (see session.hpp),
// writes, EOF, close and exit status of one exec or direct-tcpip channel, on the session's strand.
#include <utility>  // before asio on GCC 12

#include <algorithm>
#include <array>

#include "helper/ssh/session.hpp"
#include "helper/ssh/session_internal.hpp"

namespace ferry::ssh {

Channel::Channel(std::shared_ptr<Session> session, LIBSSH2_CHANNEL* channel)
    : session_(std::move(session)), channel_(channel) {}

Channel::~Channel() {
  if (channel_ && session_->is_open()) finish_adjust();  // one try: a half-sent packet blocks all sends
  session_->forget_pending_adjust(this);
  // One non-blocking attempt; whatever libssh2 cannot finish now it frees with the session.
  if (channel_ && session_->is_open()) libssh2_channel_free(channel_);
}

bool Channel::adjust_window(std::uint32_t amount) {
  // Only the first call of an adjust sees `amount`: libssh2 adds its queue to build the packet, and
  // every retry must pass that packet's amount, since that is what libssh2 credits on success.
  std::uint32_t param = adjust_packet_ ? adjust_packet_ : amount;
  if (!adjust_packet_) {
    adjust_packet_ = amount + adjust_queue_;
    adjust_queue_ = 0;
  }
  unsigned int ignored = 0;
  int rc = libssh2_channel_receive_window_adjust2(channel_, param, 1, &ignored);
  if (rc == 0) {
    adjust_packet_ = 0;
    session_->forget_pending_adjust(this);
    return true;
  }
  if (rc != LIBSSH2_ERROR_EAGAIN) adjust_queue_ = adjust_packet_;  // libssh2 queued it and kept the packet
  // Half sent, it blocks every other send until finished; whoever meets it next finishes it, so a
  // reader parked on a slow local socket cannot stall the session.
  else session_->set_pending_adjust(this);
  return false;
}

void Channel::finish_adjust() {
  if (adjust_packet_) adjust_window(0);
}

long Channel::read_raw(int stream, char* buffer, std::size_t length) {
  unsigned long initial = 0;
  unsigned long window = libssh2_channel_window_read_ex(channel_, nullptr, &initial);
  // A target above libssh2's initial window: the adjusts below grow the window to it, and the
  // floor rises with it, so libssh2's own adjust (below its initial's floor) never triggers.
  initial = std::max<unsigned long>(initial, window_target_);
  // _libssh2_channel_read adjusts when the window is below initial/4*3 + length, and
  // libssh2_channel_read_ex when length exceeds the window.
  unsigned long floor = initial / 4 * 3;
  if (adjust_packet_ || window < floor + length) {
    // Another coroutine's half-sent packet would turn our adjust away; it goes once that is out
    // (send_hook wakes the waiters). Ours, half sent, must be finished by us.
    session_->finish_pending_adjust();
    window = libssh2_channel_window_read_ex(channel_, nullptr, nullptr);
    if (window < floor + length && (adjust_packet_ || !session_->send_stalled())) {
      adjust_window(static_cast<std::uint32_t>(initial + length - window));
      window = libssh2_channel_window_read_ex(channel_, nullptr, nullptr);
    }
  }
  if (window <= floor) return LIBSSH2_ERROR_EAGAIN;
  length = std::min<std::size_t>(length, window - floor);
  return static_cast<long>(libssh2_channel_read_ex(channel_, stream, buffer, length));
}

asio::awaitable<Result<std::size_t>> Channel::read_some(std::span<char> buffer, Clock::time_point deadline, int stream) {
  for (;;) {
    if (interrupted_) co_return std::unexpected(make_error(Errc::kInterrupted, "read interrupted"));
    if (!session_->is_open())
      co_return std::unexpected(make_error(Errc::kClosed, "reading from the channel: " + session_->close_reason()));
    auto n = read_raw(stream, buffer.data(), buffer.size());
    if (n > 0) {
      // libssh2 hands out about one packet (32 KiB) per call: keep taking what is already here so
      // the caller does one socket write per burst instead of one per packet.
      auto got = static_cast<std::size_t>(n);
      while (got < buffer.size()) {
        auto more = read_raw(stream, buffer.data() + got, buffer.size() - got);
        if (more <= 0) break;  // EAGAIN, EOF or an error: the next call reports it
        got += static_cast<std::size_t>(more);
      }
      if (exit_quiet_since_) exit_quiet_since_ = Clock::now();  // still draining what it wrote before it died
      co_return got;
    }
    if (n == 0 && libssh2_channel_eof(channel_)) co_return std::size_t{0};
    if (n < 0 && n != LIBSSH2_ERROR_EAGAIN && n != LIBSSH2_ERROR_BAD_USE && !session_->spurious_send_error(n))
      co_return std::unexpected(session_->last_error("reading from the channel"));
    // The command died and its output stays open (set_exit_grace): EOF once it has been quiet.
    Clock::time_point wait_until = deadline;
    if (exit_grace_ && !exit_quiet_since_ && exit_reported()) exit_quiet_since_ = Clock::now();
    if (exit_quiet_since_) {
      const Clock::time_point over = *exit_quiet_since_ + *exit_grace_;
      if (Clock::now() >= over) co_return std::size_t{0};
      wait_until = std::min(deadline, over);
    }
    auto w = co_await session_->wait_socket(wait_until, "reading from the channel");
    if (!w && !(exit_quiet_since_ && w.error().code == make_error_code(Errc::kTimeout) && wait_until < deadline))
      co_return std::unexpected(w.error());
  }
}

bool Channel::exit_reported() const {
  if (libssh2_channel_get_exit_status(channel_) != 0) return true;
  char* sig = nullptr;
  std::size_t sig_len = 0;
  if (libssh2_channel_get_exit_signal(channel_, &sig, &sig_len, nullptr, nullptr, nullptr, nullptr) != 0 || !sig) return false;
  libssh2_free(session_->raw(), sig);
  return true;
}

bool Channel::closed_by_peer() {
  // wait_closed only reads (it sends nothing) and answers 0 once the server's CLOSE is in; it
  // refuses to run before EOF, which the server always sends first.
  if (!peer_closed_ && libssh2_channel_eof(channel_) == 1) peer_closed_ = libssh2_channel_wait_closed(channel_) == 0;
  return peer_closed_;
}

void Channel::ignore_stderr() { libssh2_channel_handle_extended_data2(channel_, LIBSSH2_CHANNEL_EXTENDED_DATA_IGNORE); }

void Channel::interrupt() {
  interrupted_ = true;
  session_->wake();
}

asio::awaitable<Result<void>> Channel::write_all(std::string_view bytes, Clock::time_point deadline) {
  while (!bytes.empty()) {
    auto r = co_await retry(
        *session_,
        [&] {
          // A half-sent packet of ours is finished first: libssh2 refuses every other send until then.
          const bool may_leave = !(write_pending_ && session_->send_stalled());
          if ((interrupted_ || peer_closed_) && may_leave) return static_cast<long>(LIBSSH2_ERROR_CHANNEL_CLOSED);
          auto rc = static_cast<long>(libssh2_channel_write_ex(channel_, 0, bytes.data(), bytes.size()));
          write_pending_ = rc == LIBSSH2_ERROR_EAGAIN;
          // Waiting for window: only the server's adjust ends that, and after its CLOSE none comes.
          if (write_pending_ && closed_by_peer() && !session_->send_stalled()) return static_cast<long>(LIBSSH2_ERROR_CHANNEL_CLOSED);
          return rc;
        },
        deadline, "writing to the channel");
    if (!r && interrupted_) co_return std::unexpected(make_error(Errc::kInterrupted, "write interrupted"));
    if (!r && peer_closed_) co_return std::unexpected(make_error(Errc::kClosed, "writing to the channel: the server closed it"));
    if (!r) co_return std::unexpected(r.error());
    bytes.remove_prefix(static_cast<std::size_t>(*r));
  }
  co_return Result<void>{};
}

asio::awaitable<Result<void>> Channel::send_eof(Clock::time_point deadline) {
  auto r = co_await retry(*session_, [&] { return static_cast<long>(libssh2_channel_send_eof(channel_)); }, deadline,
                          "sending EOF");
  if (!r) co_return std::unexpected(r.error());
  co_return Result<void>{};
}

asio::awaitable<Result<ExecResult>> Channel::collect(Clock::time_point deadline) {
  ExecResult result;
  std::array<char, 16384> buf{};
  bool out_done = false, err_done = false;
  while (!out_done || !err_done) {
    bool progressed = false;
    for (int stream : {0, 1}) {
      bool& done = stream == 0 ? out_done : err_done;
      if (done) continue;
      auto n = read_raw(stream, buf.data(), buf.size());
      if (n > 0) {
        (stream == 0 ? result.out : result.err).append(buf.data(), static_cast<std::size_t>(n));
        progressed = true;
      } else if (n == 0) {
        if (libssh2_channel_eof(channel_)) done = true;
      } else if (n != LIBSSH2_ERROR_EAGAIN && n != LIBSSH2_ERROR_BAD_USE) {
        co_return std::unexpected(session_->last_error("reading command output"));
      }
    }
    if (out_done && err_done) break;
    if (!progressed) {
      if (libssh2_channel_eof(channel_)) {
        // EOF with nothing buffered on either stream.
        auto a = read_raw(0, buf.data(), buf.size());
        if (a > 0) result.out.append(buf.data(), static_cast<std::size_t>(a));  // before b reuses buf
        auto b = read_raw(1, buf.data(), buf.size());
        if (b > 0) result.err.append(buf.data(), static_cast<std::size_t>(b));
        if (a <= 0 && b <= 0 && a != LIBSSH2_ERROR_EAGAIN && b != LIBSSH2_ERROR_EAGAIN) break;
        if (a > 0 || b > 0) continue;  // else wait: looping here would starve the strand
      }
      auto w = co_await session_->wait_socket(deadline, "waiting for command output");
      if (!w) co_return std::unexpected(w.error());
    }
  }
  auto c = co_await close(deadline);
  if (!c) co_return std::unexpected(c.error());
  result.exit_status = libssh2_channel_get_exit_status(channel_);
  char* sig = nullptr;
  std::size_t sig_len = 0;
  if (libssh2_channel_get_exit_signal(channel_, &sig, &sig_len, nullptr, nullptr, nullptr, nullptr) == 0 && sig) {
    result.exit_signal.assign(sig, sig_len);
    libssh2_free(session_->raw(), sig);
  }
  co_return result;
}

asio::awaitable<Result<void>> Channel::close(Clock::time_point deadline) {
  if (closed_) co_return Result<void>{};
  auto r = co_await retry(*session_, [&] { return static_cast<long>(libssh2_channel_close(channel_)); }, deadline,
                          "closing the channel");
  if (!r) co_return std::unexpected(r.error());
  auto w = co_await retry(*session_, [&] { return static_cast<long>(libssh2_channel_wait_closed(channel_)); }, deadline,
                          "closing the channel");
  if (!w) co_return std::unexpected(w.error());
  closed_ = true;
  co_return Result<void>{};
}

asio::awaitable<void> Channel::release(Clock::time_point deadline) {
  if (!channel_) co_return;
  if (session_->is_open()) {
    auto r = co_await retry(*session_, [&] { return static_cast<long>(libssh2_channel_free(channel_)); }, deadline,
                            "freeing the channel");
    if (r) channel_ = nullptr;  // else the session frees it when it goes
  }
}

int Channel::exit_status() const { return libssh2_channel_get_exit_status(channel_); }
bool Channel::eof() const { return libssh2_channel_eof(channel_) == 1; }

}  // namespace ferry::ssh

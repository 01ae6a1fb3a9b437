// libssh2 on Boost.Asio (see session.hpp). Every function here runs on the session's strand.
#include "helper/ssh/session.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <libssh2.h>
#include <libssh2_sftp.h>
#include <spdlog/spdlog.h>

#include "helper/ssh/aes_ctr_provider.hpp"
#include "helper/ssh/private_key_file.hpp"

namespace ferry::ssh {
namespace {

using asio::use_awaitable;
using namespace std::chrono_literals;

// libssh2 1.10 has neither chacha20 nor GCM; CTR modes are what OpenSSH 9 still offers it.
constexpr const char* kCiphers = "aes128-ctr,aes256-ctr,aes192-ctr";
constexpr const char* kMacs = "hmac-sha2-256,hmac-sha2-512,hmac-sha1";
const std::vector<std::string> kHostKeyAlgorithms{"ssh-ed25519",        "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
                                                  "ecdsa-sha2-nistp521", "rsa-sha2-512",        "rsa-sha2-256",
                                                  "ssh-rsa"};

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Before libssh2 keys its first cipher: libssh2 then gets the keystream-buffering AES-CTR.
    if (std::string why_not; !install_aes_ctr_provider(&why_not))
      spdlog::debug("ssh: OpenSSL's own AES-CTR in use ({})", why_not);
    libssh2_init(0);
  });
}

Error timeout_error(std::string_view what) { return make_error(Errc::kTimeout, std::string(what) + ": timed out"); }

// Repeats `call` while libssh2 says EAGAIN, waiting for the socket in between.
template <class F>
asio::awaitable<Result<long>> retry(Session& s, F call, Clock::time_point deadline, std::string_view what) {
  for (;;) {
    if (!s.is_open()) co_return std::unexpected(make_error(Errc::kClosed, std::string(what) + ": " + s.close_reason()));
    s.finish_pending_adjust();
    long rc = call();
    // BAD_USE: another coroutine's packet is half sent; its owner finishes it when the socket
    // drains, so this call waits for that like for EAGAIN.
    if (rc == LIBSSH2_ERROR_BAD_USE || s.spurious_send_error(rc)) rc = LIBSSH2_ERROR_EAGAIN;
    if (rc != LIBSSH2_ERROR_EAGAIN) {
      if (rc < 0) co_return std::unexpected(s.last_error(what));
      co_return rc;
    }
    auto w = co_await s.wait_socket(deadline, what);
    if (!w) co_return std::unexpected(w.error());
  }
}

// The same for calls that return a pointer and report EAGAIN through the session's errno.
template <class T, class F>
asio::awaitable<Result<T*>> retry_ptr(Session& s, F call, Clock::time_point deadline, std::string_view what) {
  for (;;) {
    if (!s.is_open()) co_return std::unexpected(make_error(Errc::kClosed, std::string(what) + ": " + s.close_reason()));
    s.finish_pending_adjust();
    T* p = call();
    if (p) co_return p;
    int e = libssh2_session_last_errno(s.raw());
    if (e != LIBSSH2_ERROR_EAGAIN && e != LIBSSH2_ERROR_BAD_USE) co_return std::unexpected(s.last_error(what));
    auto w = co_await s.wait_socket(deadline, what);
    if (!w) co_return std::unexpected(w.error());
  }
}

}  // namespace

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

// ---------------------------------------------------------------------------------------------
// Channel

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
      co_return got;
    }
    if (n == 0 && libssh2_channel_eof(channel_)) co_return std::size_t{0};
    if (n < 0 && n != LIBSSH2_ERROR_EAGAIN && n != LIBSSH2_ERROR_BAD_USE && !session_->spurious_send_error(n))
      co_return std::unexpected(session_->last_error("reading from the channel"));
    auto w = co_await session_->wait_socket(deadline, "reading from the channel");
    if (!w) co_return std::unexpected(w.error());
  }
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
          if (interrupted_ && !(write_pending_ && session_->send_stalled())) return static_cast<long>(LIBSSH2_ERROR_CHANNEL_CLOSED);
          auto rc = static_cast<long>(libssh2_channel_write_ex(channel_, 0, bytes.data(), bytes.size()));
          write_pending_ = rc == LIBSSH2_ERROR_EAGAIN;
          return rc;
        },
        deadline, "writing to the channel");
    if (!r && interrupted_) co_return std::unexpected(make_error(Errc::kInterrupted, "write interrupted"));
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

// ---------------------------------------------------------------------------------------------
// Session

// Releases the session's channel-open turn when the opening coroutine leaves its scope.
class OpenTurn {
 public:
  explicit OpenTurn(Session& s) : s_(&s) {}
  ~OpenTurn() { s_->unlock_open(); }
  OpenTurn(const OpenTurn&) = delete;
  OpenTurn& operator=(const OpenTurn&) = delete;

 private:
  Session* s_;
};

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
    if (socket_.is_open()) ::shutdown(socket_.native_handle(), SHUT_RDWR);
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

long Session::recv_hook(int socket, void* buffer, std::size_t length, int flags, void** abstract) {
  auto* self = static_cast<Session*>(*abstract);
  // libssh2 talks to ssh-agent through this hook too, on the agent's own (blocking) socket: none
  // of the SSH socket's read-ahead or remembered EAGAIN applies there (a remembered EAGAIN made
  // agent auth fail with "cannot list keys").
  if (socket != self->socket_.native_handle()) {
    const ssize_t n = ::recv(socket, buffer, length, flags);
    return n < 0 ? -errno : static_cast<long>(n);
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
    ssize_t n = ::recv(socket, ahead.data(), ahead.size(), flags);
    if (n < 0) {
      if ((errno == EAGAIN || errno == EWOULDBLOCK) && !self->rx_blocking_) self->rx_drained_ = true;
      return -errno;
    }
    if (n == 0) return 0;
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
  return static_cast<long>(n);
}

long Session::send_hook(int socket, const void* buffer, std::size_t length, int flags, void** abstract) {
  auto* self = static_cast<Session*>(*abstract);
  ssize_t n = ::send(socket, buffer, length, flags | MSG_NOSIGNAL);
  if (socket != self->socket_.native_handle()) return n < 0 ? -errno : static_cast<long>(n);  // ssh-agent's socket
  if (n < 0) {
    int e = errno;
    if (e == EAGAIN || e == EWOULDBLOCK) self->send_stalled_ = true;
    else self->send_failed_ = true;
    return -e;
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
  auto kind = (dirs & LIBSSH2_SESSION_BLOCK_OUTBOUND) ? asio::posix::stream_descriptor::wait_write
                                                       : asio::posix::stream_descriptor::wait_read;
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
    ::shutdown(socket_.native_handle(), SHUT_RDWR);
    boost::system::error_code ignored;
    socket_.cancel(ignored);
  }
}

asio::awaitable<Result<void>> Session::connect_tcp(Clock::time_point deadline) {
  using tcp = asio::ip::tcp;
  std::string what = "connecting to " + describe(host_);
  tcp::resolver resolver(executor_);
  asio::steady_timer timer(executor_, deadline);
  bool expired = false;
  timer.async_wait([&](boost::system::error_code ec) {
    if (!ec) {
      expired = true;
      resolver.cancel();
    }
  });
  boost::system::error_code ec;
  auto results = co_await resolver.async_resolve(host_.hostname, std::to_string(host_.port),
                                                 asio::redirect_error(use_awaitable, ec));
  timer.cancel();
  if (expired) co_return std::unexpected(timeout_error(what + " (resolving " + host_.hostname + ")"));
  if (ec) co_return std::unexpected(make_error(Errc::kConnectFailed, what + ": cannot resolve " + host_.hostname + ": " + ec.message()));
  std::string last = "no addresses";
  for (const auto& entry : results) {
    tcp::socket sock(executor_);
    asio::steady_timer t(executor_, deadline);
    bool timed_out = false;
    t.async_wait([&](boost::system::error_code e) {
      if (!e) {
        timed_out = true;
        boost::system::error_code ignored;
        sock.close(ignored);
      }
    });
    co_await sock.async_connect(entry.endpoint(), asio::redirect_error(use_awaitable, ec));
    t.cancel();
    if (timed_out) co_return std::unexpected(timeout_error(what));
    if (ec) {
      last = entry.endpoint().address().to_string() + ": " + ec.message();
      continue;
    }
    sock.set_option(tcp::no_delay(true), ec);
    // release(), not dup(): asio closes its own sockets without EPOLL_CTL_DEL, and a dup kept the
    // file (so its epoll registration) alive, pointing at a recycled reactor slot; every packet then
    // also woke whatever op later took that slot (a tunnel's acceptor: one stray accept() per packet).
    int fd = sock.release(ec);
    if (ec || fd < 0) co_return std::unexpected(make_error(Errc::kConnectFailed, what + ": " + ec.message()));
    co_return co_await attach_fd(fd);
  }
  co_return std::unexpected(make_error(Errc::kConnectFailed, what + ": " + last));
}

asio::awaitable<Result<void>> Session::attach_fd(int fd) {
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  boost::system::error_code ec;
  socket_.assign(fd, ec);
  if (ec) {
    ::close(fd);
    co_return std::unexpected(make_error(Errc::kConnectFailed, "attaching the socket: " + ec.message()));
  }
  socket_.non_blocking(true, ec);
  global_init();
  session_ = libssh2_session_init_ex(nullptr, nullptr, nullptr, this);
  if (!session_) co_return std::unexpected(make_error(Errc::kConnectFailed, "libssh2_session_init failed"));
  libssh2_session_set_blocking(session_, 0);
  libssh2_session_callback_set(session_, LIBSSH2_CALLBACK_RECV, reinterpret_cast<void*>(&Session::recv_hook));
  libssh2_session_callback_set(session_, LIBSSH2_CALLBACK_SEND, reinterpret_cast<void*>(&Session::send_hook));
  co_return Result<void>{};
}

namespace {

// Sets a preference list holding only what this libssh2 supports: given unknown names, libssh2
// 1.10 compacts the list with an overlapping memcpy (undefined behaviour ASan reports).
void set_method_pref(LIBSSH2_SESSION* session, int type, const std::string& wanted) {
  const char** algs = nullptr;
  int n = libssh2_session_supported_algs(session, type, &algs);
  std::vector<std::string> supported;
  for (int i = 0; i < n; ++i) supported.emplace_back(algs[i]);
  if (algs) libssh2_free(session, algs);
  std::string list;
  std::size_t start = 0;
  while (start <= wanted.size()) {
    auto comma = wanted.find(',', start);
    std::string name = wanted.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!name.empty() && std::ranges::find(supported, name) != supported.end()) list += (list.empty() ? "" : ",") + name;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (!list.empty()) libssh2_session_method_pref(session, type, list.c_str());
}

}  // namespace

asio::awaitable<Result<void>> Session::handshake(Clock::time_point deadline) {
  std::string what = "SSH handshake with " + describe(host_);
  set_method_pref(session_, LIBSSH2_METHOD_CRYPT_CS, kCiphers);
  set_method_pref(session_, LIBSSH2_METHOD_CRYPT_SC, kCiphers);
  set_method_pref(session_, LIBSSH2_METHOD_MAC_CS, kMacs);
  set_method_pref(session_, LIBSSH2_METHOD_MAC_SC, kMacs);
  // Ask for a key type known_hosts already lists first, as OpenSSH does, so a host known by its
  // ECDSA key is not reported as changed because ed25519 was negotiated.
  std::vector<std::filesystem::path> files(host_.user_known_hosts_files.begin(), host_.user_known_hosts_files.end());
  files.insert(files.end(), host_.global_known_hosts_files.begin(), host_.global_known_hosts_files.end());
  std::vector<std::string> order;
  for (const auto& t : known_key_types(files, host_.hostname, host_.port))
    if (std::ranges::find(kHostKeyAlgorithms, t) != kHostKeyAlgorithms.end()) order.push_back(t);
  for (const auto& t : kHostKeyAlgorithms)
    if (std::ranges::find(order, t) == order.end()) order.push_back(t);
  std::string prefs;
  for (const auto& t : order) prefs += (prefs.empty() ? "" : ",") + t;
  set_method_pref(session_, LIBSSH2_METHOD_HOSTKEY, prefs);
  int fd = socket_.native_handle();
  auto r = co_await retry(*this, [&] { return static_cast<long>(libssh2_session_handshake(session_, fd)); }, deadline, what);
  if (!r) co_return std::unexpected(r.error());
  co_return Result<void>{};
}

Result<void> Session::check_host_key() {
  std::size_t len = 0;
  int type = 0;
  const char* raw = libssh2_session_hostkey(session_, &len, &type);
  if (!raw) return std::unexpected(make_error(Errc::kConnectFailed, "the server sent no host key"));
  PublicKey offered{"", std::vector<std::uint8_t>(raw, raw + len)};
  offered.type = key_type_of_blob(offered.blob);
  host_key_ = HostKeyInfo{host_.hostname, host_.port, offered, sha256_fingerprint(offered.blob), false, ""};
  std::vector<std::filesystem::path> files(host_.user_known_hosts_files.begin(), host_.user_known_hosts_files.end());
  files.insert(files.end(), host_.global_known_hosts_files.begin(), host_.global_known_hosts_files.end());
  auto check = ferry::ssh::check_host_key(files, host_.hostname, host_.port, offered);
  std::string name = known_hosts_name(host_.hostname, host_.port);
  switch (check.status) {
    case HostKeyStatus::kMatch: return {};
    case HostKeyStatus::kRevoked:
      return std::unexpected(make_error(Errc::kHostKeyRevoked, "host key " + offered.type + " " + host_key_.fingerprint +
                                                                   " for " + name + " is marked @revoked in " +
                                                                   check.known[0].file + ":" + std::to_string(check.known[0].line)));
    case HostKeyStatus::kChanged: {
      std::string msg = "HOST KEY FOR " + name + " HAS CHANGED (possible man-in-the-middle attack). The server offered " +
                        offered.type + " " + host_key_.fingerprint + "; known_hosts lists";
      for (const auto& e : check.known)
        msg += " " + e.key.type + " " + sha256_fingerprint(e.key.blob) + " (" + e.file + ":" + std::to_string(e.line) + ")";
      msg += ". If the change is expected (the box was rebuilt), remove the old entry with: ssh-keygen -R '" + name +
             "' -f " + check.known[0].file + ", then run: ferry trust " + host_.alias;
      return std::unexpected(make_error(Errc::kHostKeyChanged, msg));
    }
    case HostKeyStatus::kUnknown: break;
  }
  if (options_.trust_unknown && options_.expect_fingerprint && *options_.expect_fingerprint != host_key_.fingerprint)
    return std::unexpected(make_error(Errc::kHostKeyUnknown, "host " + name + " offered " + offered.type + " key " +
                                                                 host_key_.fingerprint + ", not the expected " +
                                                                 *options_.expect_fingerprint + "; nothing recorded"));
  bool record = options_.trust_unknown || host_.strict_host_key_checking != StrictHostKeyChecking::kYes;
  if (!record)
    return std::unexpected(make_error(
        Errc::kHostKeyUnknown, "host " + name + " is not in known_hosts; it offered " + offered.type + " key " +
                                   host_key_.fingerprint + ". Check that fingerprint with the box's provider, then run: ferry trust " +
                                   host_.alias + " (or set \"StrictHostKeyChecking accept-new\" for this Host in your ssh config)"));
  if (host_.user_known_hosts_files.empty()) return {};
  const auto& file = host_.user_known_hosts_files.front();
  if (auto a = append_known_host(file, host_.hostname, host_.port, offered); !a)
    return std::unexpected(make_error(Errc::kHostKeyUnknown, "cannot record the host key: " + a.error()));
  host_key_.newly_recorded = true;
  host_key_.recorded_in = file;
  spdlog::info("recorded host key {} {} for {} in {}", offered.type, host_key_.fingerprint, name, file);
  return {};
}

asio::awaitable<Result<void>> Session::authenticate(Clock::time_point deadline) {
  const std::string& user = host_.user;
  auto ulen = static_cast<unsigned>(user.size());
  std::string who = describe(host_);
  auto methods = co_await retry_ptr<char>(
      *this, [&] { return libssh2_userauth_list(session_, user.c_str(), ulen); }, deadline, "asking " + who + " for auth methods");
  if (libssh2_userauth_authenticated(session_)) {
    authenticated_with_ = "none";
    co_return Result<void>{};
  }
  if (!methods) co_return std::unexpected(methods.error());
  std::string offered = *methods;
  if (offered.find("publickey") == std::string::npos)
    co_return std::unexpected(make_error(Errc::kAuthFailed, "authentication as " + who + " failed: the server offers only " +
                                                                offered + "; ferry authenticates with keys (agent or files)"));

  // Public halves of the configured identities, so IdentitiesOnly can filter the agent's keys.
  std::vector<std::vector<std::uint8_t>> configured_blobs;
  for (const auto& f : host_.identity_files) {
    std::ifstream in(f + ".pub");
    std::string type, b64;
    if (in >> type >> b64)
      if (auto blob = base64_decode(b64)) configured_blobs.push_back(std::move(*blob));
  }

  std::string agent_path = options_.agent_socket ? *options_.agent_socket : (std::getenv("SSH_AUTH_SOCK") ? std::getenv("SSH_AUTH_SOCK") : "");
  if (!agent_path.empty()) {
    LIBSSH2_AGENT* agent = libssh2_agent_init(session_);
    if (agent) {
      libssh2_agent_set_identity_path(agent, agent_path.c_str());
      if (libssh2_agent_connect(agent) != 0) {
        auth_log_.push_back("ssh-agent at " + agent_path + ": cannot connect");
      } else if (libssh2_agent_list_identities(agent) != 0) {
        auth_log_.push_back("ssh-agent: cannot list keys");
      } else {
        libssh2_agent_publickey* id = nullptr;
        libssh2_agent_publickey* prev = nullptr;
        int listed = 0;
        while (libssh2_agent_get_identity(agent, &id, prev) == 0) {
          prev = id;
          ++listed;
          std::vector<std::uint8_t> blob(id->blob, id->blob + id->blob_len);
          std::string label = "ssh-agent key " + key_type_of_blob(blob) + " " + sha256_fingerprint(blob) +
                              (id->comment && *id->comment ? std::string(" (") + id->comment + ")" : "");
          if (host_.identities_only && std::ranges::find(configured_blobs, blob) == configured_blobs.end()) {
            auth_log_.push_back(label + ": skipped (IdentitiesOnly)");
            continue;
          }
          auto r = co_await retry(*this, [&] { return static_cast<long>(libssh2_agent_userauth(agent, user.c_str(), id)); },
                                  deadline, "agent auth");
          if (r) {
            authenticated_with_ = label;
            libssh2_agent_disconnect(agent);
            libssh2_agent_free(agent);
            co_return Result<void>{};
          }
          if (r.error().code == make_error_code(Errc::kTimeout) || r.error().code == make_error_code(Errc::kClosed)) {
            libssh2_agent_disconnect(agent);
            libssh2_agent_free(agent);
            co_return std::unexpected(r.error());
          }
          auth_log_.push_back(label + ": rejected");
        }
        if (listed == 0) auth_log_.push_back("ssh-agent at " + agent_path + ": no keys");
      }
      libssh2_agent_disconnect(agent);
      libssh2_agent_free(agent);
    }
  } else {
    auth_log_.push_back("ssh-agent: SSH_AUTH_SOCK not set");
  }

  int found = 0;
  for (const auto& file : host_.identity_files) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
      if (host_.identity_files_explicit) auth_log_.push_back(file + ": not found");
      continue;
    }
    ++found;
    auto info = inspect_private_key_file(file);
    if (!info) {
      auth_log_.push_back(file + ": " + info.error());
      continue;
    }
    std::optional<std::string> passphrase;
    if (info->encrypted) {
      if (options_.passphrase) passphrase = options_.passphrase(file);
      if (!passphrase) {
        auth_log_.push_back(file + ": encrypted and no passphrase was given");
        continue;
      }
    }
    std::string pub = file + ".pub";
    bool has_pub = std::filesystem::exists(pub, ec);
    const char* pass = passphrase ? passphrase->c_str() : "";
    auto r = co_await retry(
        *this,
        [&] {
          return static_cast<long>(libssh2_userauth_publickey_fromfile_ex(session_, user.c_str(), ulen,
                                                                          has_pub ? pub.c_str() : nullptr, file.c_str(), pass));
        },
        deadline, "key auth");
    if (r) {
      authenticated_with_ = file;
      co_return Result<void>{};
    }
    if (r.error().code == make_error_code(Errc::kTimeout) || r.error().code == make_error_code(Errc::kClosed))
      co_return std::unexpected(r.error());
    std::string why = r.error().code == libssh2_error(LIBSSH2_ERROR_FILE)
                          ? (info->encrypted ? "wrong passphrase or unsupported key format" : "unsupported key format")
                          : "rejected by the server";
    auth_log_.push_back(file + ": " + why);
  }
  if (found == 0 && !host_.identity_files_explicit) auth_log_.push_back("no key files in ~/.ssh (id_ed25519, id_ecdsa, ...)");
  std::string tried;
  for (const auto& l : auth_log_) tried += "\n  - " + l;
  co_return std::unexpected(make_error(Errc::kAuthFailed, "authentication as " + who + " failed; tried:" + tried));
}

asio::awaitable<Result<std::shared_ptr<Session>>> Session::connect(Executor executor, const HostConfig& host,
                                                                   SessionOptions options) {
  if (host.proxy_command)
    co_return std::unexpected(make_error(Errc::kUnsupported, "ProxyCommand (" + *host.proxy_command +
                                                                 ") is not supported by ferry; use ProxyJump"));
  std::chrono::milliseconds connect_timeout =
      host.connect_timeout_s ? std::chrono::milliseconds(*host.connect_timeout_s * 1000) : options.connect_timeout;

  std::shared_ptr<Session> previous;
  std::vector<HostConfig> chain = host.proxy_jump;
  chain.push_back(host);
  chain.back().proxy_jump.clear();
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const HostConfig& hop = chain[i];
    auto deadline = Clock::now() + connect_timeout;
    // `ferry trust` vouches for the host it names; the hops keep their own StrictHostKeyChecking.
    SessionOptions hop_options = options;
    if (i + 1 < chain.size()) {
      hop_options.trust_unknown = false;
      hop_options.expect_fingerprint.reset();
    }
    std::shared_ptr<Session> s(new Session(executor, hop, hop_options));
    if (!previous) {
      auto c = co_await s->connect_tcp(deadline);
      if (!c) co_return std::unexpected(c.error());
    } else {
      auto ch = co_await previous->open_direct_tcpip(hop.hostname, hop.port, deadline);
      if (!ch) {
        co_return std::unexpected(make_error(Errc::kConnectFailed, "connecting to " + describe(hop) + " through " +
                                                                       describe(previous->host()) + ": " + ch.error().message));
      }
      int sv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        co_return std::unexpected(make_error(Errc::kConnectFailed, "socketpair failed"));
      auto end = std::make_shared<asio::posix::stream_descriptor>(executor, sv[1]);
      auto a = co_await s->attach_fd(sv[0]);
      if (!a) co_return std::unexpected(a.error());
      previous->start_bridge(*ch, end, 256 << 10, [] {});
      s->jump_ = previous;
    }
    auto h = co_await s->handshake(deadline);
    if (!h) co_return std::unexpected(h.error());
    if (auto k = s->check_host_key(); !k) co_return std::unexpected(k.error());
    if (options.host_key_only && i + 1 == chain.size()) co_return s;
    auto auth = co_await s->authenticate(Clock::now() + options.auth_timeout);
    if (!auth) co_return std::unexpected(auth.error());
    spdlog::debug("ssh: authenticated to {} with {}", describe(hop), s->authenticated_with());
    previous = std::move(s);
  }
  co_return previous;
}

void Session::add_close_hook(std::function<void()> hook) {
  if (closed_) hook();
  else close_hooks_.push_back(std::move(hook));
}

void Session::start_bridge(std::shared_ptr<Channel> channel, std::shared_ptr<asio::posix::stream_descriptor> end,
                           std::size_t buffer_bytes, std::function<void()> on_done) {
  // Both directions share one completion: the second to end runs on_done.
  auto remaining = std::make_shared<int>(2);
  auto finish = [remaining, on_done = std::move(on_done)](std::exception_ptr e) {
    if (e) spdlog::warn("ssh: a channel bridge ended with an exception");
    if (--*remaining == 0 && on_done) on_done();
  };
  asio::co_spawn(executor_, bridge_loop(channel, end, buffer_bytes), finish);
  asio::co_spawn(executor_, bridge_up(channel, end, buffer_bytes), finish);
}

asio::awaitable<void> Session::bridge_loop(std::shared_ptr<Channel> channel,
                                           std::shared_ptr<asio::posix::stream_descriptor> end, std::size_t buffer_bytes) {
  // channel -> socket. Parameters, not lambda captures: they live in this coroutine's own frame.
  auto self = shared_from_this();
  std::vector<char> buf(buffer_bytes);
  for (;;) {
    auto n = co_await channel->read_some(buf, Clock::time_point::max());
    if (!n || *n == 0) {
      if (!n || channel->eof()) {
        // EOF from the far side ends only our writing half; an error ends the socket.
        if (end->is_open()) ::shutdown(end->native_handle(), n ? SHUT_WR : SHUT_RDWR);
        co_return;
      }
      continue;
    }
    // A burst usually fits the socket's buffer: send it now rather than through the reactor, whose
    // completion costs another round on the strand; when it does not, wait until the socket takes
    // more. Always send(MSG_NOSIGNAL), never write(): a client that closed (a port probe, a browser
    // tab) must be an EPIPE for this connection, not a SIGPIPE that kills the process (issue #17).
    boost::system::error_code ec;
    for (std::size_t sent = 0; sent < *n;) {
      auto w = ::send(end->native_handle(), buf.data() + sent, *n - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (w > 0) {
        sent += static_cast<std::size_t>(w);
      } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        co_await end->async_wait(asio::posix::stream_descriptor::wait_write, asio::redirect_error(use_awaitable, ec));
        if (ec) break;
      } else if (w < 0 && errno == EINTR) {
        continue;
      } else {
        ec = boost::system::error_code(w < 0 ? errno : EPIPE, boost::system::system_category());
        break;
      }
    }
    if (ec) {
      channel->interrupt();  // the other direction stops writing into a dead connection
      if (end->is_open()) ::shutdown(end->native_handle(), SHUT_RDWR);
      co_return;
    }
  }
}

asio::awaitable<void> Session::bridge_up(std::shared_ptr<Channel> channel,
                                         std::shared_ptr<asio::posix::stream_descriptor> end, std::size_t buffer_bytes) {
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
    auto w = co_await channel->write_all(std::string_view(buf.data(), n), Clock::time_point::max());
    if (!w) {
      channel->interrupt();
      if (end->is_open()) ::shutdown(end->native_handle(), SHUT_RDWR);
      co_return;
    }
  }
}

asio::awaitable<Result<std::shared_ptr<Channel>>> Session::open_exec(std::string command, Clock::time_point deadline) {
  if (auto turn = co_await lock_open(deadline); !turn) co_return std::unexpected(turn.error());
  OpenTurn turn(*this);
  const auto started = Clock::now();
  auto ch = co_await retry_ptr<LIBSSH2_CHANNEL>(
      *this, [&] { return libssh2_channel_open_session(session_); }, deadline, "opening a session channel");
  if (!ch) co_return std::unexpected(ch.error());
  note_open_time(started);
  auto channel = std::make_shared<Channel>(shared_from_this(), *ch);
  // Exec channels carry the agent's replies (pulls): their window grows to the link's
  // bandwidth-delay product with the first read, once this very open has timed the link (a warm
  // connect opens no channel before the agent's).
  channel->set_window_target(receive_window(LIBSSH2_CHANNEL_WINDOW_DEFAULT));
  auto r = co_await retry(
      *this,
      [&] {
        return static_cast<long>(libssh2_channel_process_startup(*ch, "exec", 4, command.data(),
                                                                 static_cast<unsigned>(command.size())));
      },
      deadline, "starting the remote command");
  if (!r) co_return std::unexpected(r.error());
  co_return channel;
}

asio::awaitable<Result<ExecResult>> Session::exec(std::string command, Clock::time_point deadline, std::string input) {
  auto ch = co_await open_exec(std::move(command), deadline);
  if (!ch) co_return std::unexpected(ch.error());
  if (!input.empty()) {
    auto w = co_await (*ch)->write_all(input, deadline);
    if (!w) co_return std::unexpected(w.error());
  }
  auto e = co_await (*ch)->send_eof(deadline);
  if (!e) co_return std::unexpected(e.error());
  co_return co_await (*ch)->collect(deadline);
}

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

asio::awaitable<Result<void>> Session::sftp_write_file(std::string remote_path, std::span<const char> data, int mode,
                                                       Clock::time_point deadline) {
  std::string what = "uploading " + remote_path + " over SFTP";
  Result<LIBSSH2_SFTP*> sftp = std::unexpected(Error{});
  {
    if (auto turn = co_await lock_open(deadline); !turn) co_return std::unexpected(turn.error());
    OpenTurn turn(*this);
    sftp = co_await retry_ptr<LIBSSH2_SFTP>(*this, [&] { return libssh2_sftp_init(session_); }, deadline, what);
  }
  if (!sftp) co_return std::unexpected(sftp.error());
  auto sftp_error = [&](std::string_view step) {
    unsigned long code = libssh2_sftp_last_error(*sftp);
    return make_error(Errc::kRemoteFailed, what + ": " + std::string(step) + " failed (SFTP status " + std::to_string(code) + ")");
  };
  auto handle = co_await retry_ptr<LIBSSH2_SFTP_HANDLE>(
      *this,
      [&] {
        return libssh2_sftp_open_ex(*sftp, remote_path.c_str(), static_cast<unsigned>(remote_path.size()),
                                    LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_TRUNC, mode, LIBSSH2_SFTP_OPENFILE);
      },
      deadline, what);
  if (!handle) {
    auto err = libssh2_session_last_errno(session_) == LIBSSH2_ERROR_SFTP_PROTOCOL ? sftp_error("open") : handle.error();
    co_await retry(*this, [&] { return static_cast<long>(libssh2_sftp_shutdown(*sftp)); }, deadline, what);
    co_return std::unexpected(err);
  }
  std::size_t off = 0;
  std::optional<Error> failure;
  while (off < data.size()) {
    // libssh2 pipelines SFTP writes: after EAGAIN the same buffer must be passed again.
    std::size_t chunk = std::min<std::size_t>(data.size() - off, 1 << 20);
    auto r = co_await retry(*this, [&] { return static_cast<long>(libssh2_sftp_write(*handle, data.data() + off, chunk)); },
                            deadline, what);
    if (!r) {
      failure = r.error();
      break;
    }
    off += static_cast<std::size_t>(*r);
  }
  auto c = co_await retry(*this, [&] { return static_cast<long>(libssh2_sftp_close_handle(*handle)); }, deadline, what);
  if (!failure && !c) failure = c.error();
  co_await retry(*this, [&] { return static_cast<long>(libssh2_sftp_shutdown(*sftp)); }, deadline, what);
  if (failure) co_return std::unexpected(*failure);
  co_return Result<void>{};
}

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
    int queued = 0;
    if (::ioctl(socket_.native_handle(), SIOCOUTQ, &queued) == 0 && queued == 0) libssh2_keepalive_send(session_, &next);
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

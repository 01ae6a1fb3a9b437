// One SSH connection: libssh2 driven non-blocking on Boost.Asio. Every libssh2 call runs on the
// session's strand; when libssh2 says EAGAIN the caller awaits socket readiness in the directions
// libssh2_session_block_directions names, always under a deadline. ProxyJump hops are sessions
// whose socket is one end of a socketpair bridged to a direct-tcpip channel of the previous hop.
#pragma once

#include <utility>  // before asio on GCC 12

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "common/socket_calls.hpp"
#include "helper/ssh/known_hosts.hpp"
#include "helper/ssh/ssh_config.hpp"
#include "helper/ssh/ssh_error.hpp"

// libssh2's opaque types, kept out of every includer.
struct _LIBSSH2_SESSION;
struct _LIBSSH2_CHANNEL;
struct _LIBSSH2_LISTENER;

namespace ferry::ssh {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using Executor = asio::strand<asio::io_context::executor_type>;
template <class T>
using Result = std::expected<T, Error>;
// The session's socket and a bridge's local end: TCP, or one end of a socket pair (a Unix one on
// POSIX, loopback TCP on Windows), so the family is the socket's own.
using StreamSocket = asio::generic::stream_protocol::socket;

// `s` owned by a StreamSocket on `executor` (closed when that fails, with `ec` set).
StreamSocket adopt_stream_socket(const Executor& executor, net::NativeSocket s, boost::system::error_code& ec);

// Asked for the passphrase of an encrypted key; nullopt = skip that key. It runs on the session's
// strand and may block (a terminal prompt) or wait for the IDE.
using PassphraseProvider = std::function<std::optional<std::string>(const std::string& key_path)>;

struct SessionOptions {
  std::chrono::milliseconds connect_timeout{15'000};  // when the config has no ConnectTimeout
  std::chrono::milliseconds auth_timeout{30'000};
  PassphraseProvider passphrase;
  // `ferry trust`: record an unknown host key even under StrictHostKeyChecking yes. A changed or
  // revoked key still fails.
  bool trust_unknown = false;
  // With trust_unknown: record the key only if its fingerprint is this one ("SHA256:...").
  std::optional<std::string> expect_fingerprint;
  // Stop after the final host's key check (ferry trust): no authentication there.
  bool host_key_only = false;
  std::optional<std::string> agent_socket;  // default: $SSH_AUTH_SOCK; "" disables the agent
};

struct HostKeyInfo {
  std::string host;  // as checked in known_hosts (HostName)
  int port = 22;
  PublicKey key;
  std::string fingerprint;
  bool newly_recorded = false;  // accept-new / trust wrote it to known_hosts
  std::string recorded_in;
};

struct ExecResult {
  int exit_status = -1;
  std::string exit_signal;  // e.g. "KILL" when the command died of a signal
  std::string out;
  std::string err;
};

// A receive window covering `rtt` at kWindowRate, never below floor_bytes nor above kMaxWindow. On
// loopback and LANs that is the floor (libssh2 reads the whole window into malloc'd packets before
// handing any out, so a window bigger than the link needs only slows a fast link down); 50 ms
// away it is ~24 MiB instead of the 2 MiB that caps every stock SSH channel at 40 MB/s there.
inline constexpr double kWindowRate = 500e6;             // bytes/s one channel should be able to carry
inline constexpr std::uint32_t kMaxWindow = 64u << 20;    // memory libssh2 may hold per channel
// Below this round trip the window stays at its floor: 2 MiB already carries 200 MB/s there, and a
// loaded machine's loopback can time a channel open at a few ms (a bigger window then slows it).
inline constexpr std::chrono::milliseconds kMinWindowRtt{10};
std::uint32_t receive_window_for(Clock::duration rtt, std::uint32_t floor_bytes);

class Session;

// A channel (exec or direct-tcpip). Use it on the session's strand only.
class Channel {
 public:
  Channel(std::shared_ptr<Session> session, _LIBSSH2_CHANNEL* channel);
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Some bytes of stream 0 (stdout) or 1 (stderr); 0 bytes only at EOF.
  asio::awaitable<Result<std::size_t>> read_some(std::span<char> buffer, Clock::time_point deadline, int stream = 0);
  asio::awaitable<Result<void>> write_all(std::string_view bytes, Clock::time_point deadline);
  asio::awaitable<Result<void>> send_eof(Clock::time_point deadline);
  // Reads stdout and stderr to EOF, then the exit status.
  asio::awaitable<Result<ExecResult>> collect(Clock::time_point deadline);
  asio::awaitable<Result<void>> close(Clock::time_point deadline);
  int exit_status() const;
  bool eof() const;
  // Discards stderr (stream 1) so unread diagnostics cannot stall stdout by filling the window.
  void ignore_stderr();
  // Makes a pending or later read_some or write_all fail with Errc::kInterrupted (on the strand).
  void interrupt();
  // read_some reports EOF once the command's death was reported (an exit signal or a non-zero
  // exit status) and no byte came for `grace`: a process it started may hold its stdout open,
  // and sshd sends EOF and CLOSE only when every holder is gone, so a reader would otherwise wait
  // for an answer that can never come. An exit status of 0 is indistinguishable from none in
  // libssh2 1.10 and ends nothing.
  void set_exit_grace(Clock::duration grace) { exit_grace_ = grace; }
  // The server sent the command's exit signal or a non-zero exit status.
  bool exit_reported() const;
  // Frees the channel now (sending EOF and CLOSE if still due) instead of with the session, so a
  // long-lived session forwarding many short connections does not accumulate them.
  asio::awaitable<void> release(Clock::time_point deadline);
  Session& session() { return *session_; }
  _LIBSSH2_CHANNEL* raw() const { return channel_; }
  // Reads keep the receive window near `bytes` instead of libssh2's initial window (only larger
  // counts): the first read that finds it below grows it.
  void set_window_target(std::uint32_t bytes) { window_target_ = bytes; }
  std::uint32_t window_target() const { return window_target_; }

 private:
  std::shared_ptr<Session> session_;
  _LIBSSH2_CHANNEL* channel_;
  bool closed_ = false;
  bool interrupted_ = false;
  // The server closed the channel (CLOSE): nothing written can arrive, and no window adjust will
  // come, so a write waiting for one fails instead (libssh2 1.10 itself would wait forever).
  bool peer_closed_ = false;
  bool closed_by_peer();
  std::optional<Clock::duration> exit_grace_;
  std::optional<Clock::time_point> exit_quiet_since_;  // exit reported, no byte read since then
  // libssh2 returned EAGAIN from a write: part of our packet may be out, and libssh2 refuses every
  // other send (BAD_USE) until this channel writes the same bytes again, so an interrupt waits.
  bool write_pending_ = false;
  // libssh2 1.10 grows the receive window from inside channel_read, and an adjust whose send fails
  // (BAD_USE: another packet is half sent) keeps its packet, queues its amount too, and credits the
  // retry's amount instead of the packet's: the server's idea of the window drifts above libssh2's,
  // and libssh2 then drops what overflows its own (whole packets, silently). So reads never let
  // libssh2 adjust (read_raw caps their length) and the adjusts are ours, retried with the very
  // amount their packet carries. These mirror libssh2's adjust_queue and pending adjust packet.
  std::uint32_t adjust_queue_ = 0;
  std::uint32_t adjust_packet_ = 0;
  std::uint32_t window_target_ = 0;
  // One libssh2_channel_read_ex of at most `length` bytes that cannot make libssh2 adjust the
  // window: it grows the window first when no other packet is half sent, and reads only what the
  // window allows without an adjust (LIBSSH2_ERROR_EAGAIN when that is nothing).
  long read_raw(int stream, char* buffer, std::size_t length);
  // Sends (or finishes sending) a window adjust; false while it is still pending.
  bool adjust_window(std::uint32_t amount);

 public:
  // Finishes this channel's half-sent window adjust, if any (Session::finish_pending_adjust).
  void finish_adjust();
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  // Connects to `host` (through its ProxyJump hops), checks the host key, authenticates. Runs on
  // `executor`; everything the session does later stays on it.
  static asio::awaitable<Result<std::shared_ptr<Session>>> connect(Executor executor, const HostConfig& host,
                                                                   SessionOptions options);

  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  asio::awaitable<Result<std::shared_ptr<Channel>>> open_exec(std::string command, Clock::time_point deadline);
  // Runs a command to completion, feeding `input` to its stdin.
  asio::awaitable<Result<ExecResult>> exec(std::string command, Clock::time_point deadline, std::string input = {});
  // window_bytes > 0 opens the channel with that receive window instead of libssh2's 2 MiB (bulk
  // forwards: the window bounds the bytes in flight).
  asio::awaitable<Result<std::shared_ptr<Channel>>> open_direct_tcpip(std::string host, int port,
                                                                      Clock::time_point deadline,
                                                                      std::uint32_t window_bytes = 0);
  // Remote forwards (ssh -R): asks the server to listen on bind_host:port (0: it picks; the port
  // is stored in *bound_port).
  asio::awaitable<Result<_LIBSSH2_LISTENER*>> forward_listen(std::string bind_host, int port, int* bound_port,
                                                             Clock::time_point deadline);
  // One non-blocking look for a connection on `listener`: nullptr when none is queued yet (wait
  // with wait_socket and look again).
  Result<std::shared_ptr<Channel>> poll_forward_accept(_LIBSSH2_LISTENER* listener);
  asio::awaitable<Result<void>> forward_cancel(_LIBSSH2_LISTENER* listener, Clock::time_point deadline);

  // Pumps bytes both ways between `channel` and a local stream `end` (a socket pair's end or an accepted
  // TCP socket: it must be a socket, it is written with net::socket_send) with buffers of `buffer_bytes`, both directions coroutines on this strand. A
  // half-close travels as EOF each way; an error ends both. on_done runs on the strand once both
  // directions have ended. `moved`, when given, counts the bytes moved either way.
  using ByteCount = std::shared_ptr<std::atomic<std::uint64_t>>;
  void start_bridge(std::shared_ptr<Channel> channel, std::shared_ptr<StreamSocket> end,
                    std::size_t buffer_bytes, std::function<void()> on_done, ByteCount moved = nullptr);
  // Runs `hook` on the strand when the session closes (forwards stop their listeners there).
  void add_close_hook(std::function<void()> hook);
  // Writes `data` to `remote_path` over SFTP (relative paths are under the login directory),
  // creating or truncating it with `mode`.
  asio::awaitable<Result<void>> sftp_write_file(std::string remote_path, std::span<const char> data, int mode,
                                                Clock::time_point deadline);

  // Sends keepalives every `interval` (whole seconds, at least 2: libssh2's granularity) and declares
  // the link dead when nothing at all has arrived for interval * count_max; on_dead runs once, on
  // the strand, after the session is closed.
  void start_keepalive(std::chrono::milliseconds interval, int count_max, std::function<void(const Error&)> on_dead);

  // Closes the socket: every pending operation fails with kClosed. Idempotent; call on the strand.
  void close(std::string why = "closed");
  // Wakes every operation waiting on the socket so each re-checks its state (on the strand).
  void wake();
  bool is_open() const { return !closed_; }
  const std::string& close_reason() const { return close_reason_; }

  const HostKeyInfo& host_key() const { return host_key_; }
  const HostConfig& host() const { return host_; }
  const std::vector<std::string>& auth_log() const { return auth_log_; }
  std::string authenticated_with() const { return authenticated_with_; }
  Executor executor() const { return executor_; }
  Clock::time_point last_received() const { return last_rx_; }
  // The shortest channel-open round trip seen so far (zero before the first open): what the
  // receive windows of later channels are sized by (receive_window_for).
  Clock::duration rtt() const { return Clock::duration(rtt_ticks_.load()); }
  // The receive window a bulk channel opened now gets: at least `floor_bytes`, and enough for
  // kWindowRate bytes/s over this link's round trip (the bandwidth-delay product).
  std::uint32_t receive_window(std::uint32_t floor_bytes) const { return receive_window_for(rtt(), floor_bytes); }

  // Internal plumbing for Channel and the waiting loop.
  _LIBSSH2_SESSION* raw() const { return session_; }
  asio::awaitable<Result<void>> wait_socket(Clock::time_point deadline, std::string_view what);
  Error last_error(std::string_view what) const;

 private:
  Session(Executor executor, HostConfig host, SessionOptions options);
  asio::awaitable<Result<void>> connect_tcp(Clock::time_point deadline);
  Result<void> attach_socket(net::NativeSocket s);
  Result<void> start_libssh2();
  asio::awaitable<Result<void>> handshake(Clock::time_point deadline);
  Result<void> check_host_key();
  asio::awaitable<Result<void>> authenticate(Clock::time_point deadline);
  asio::awaitable<void> keepalive_loop(std::chrono::milliseconds interval, int count_max);
  asio::awaitable<void> open_pump_channel(Clock::time_point deadline);
  asio::awaitable<void> bridge_loop(std::shared_ptr<Channel> channel, std::shared_ptr<StreamSocket> end,
                                    std::size_t buffer_bytes, ByteCount moved);
  asio::awaitable<void> bridge_up(std::shared_ptr<Channel> channel, std::shared_ptr<StreamSocket> end,
                                  std::size_t buffer_bytes, ByteCount moved);

  // libssh2's LIBSSH2_RECV_FUNC / LIBSSH2_SEND_FUNC (ssize_t, libssh2_socket_t).
  static std::ptrdiff_t recv_hook(net::NativeSocket socket, void* buffer, std::size_t length, int flags, void** abstract);
  static std::ptrdiff_t send_hook(net::NativeSocket socket, const void* buffer, std::size_t length, int flags,
                                  void** abstract);

  Executor executor_;
  HostConfig host_;
  SessionOptions options_;
  StreamSocket socket_;
  _LIBSSH2_SESSION* session_ = nullptr;
  std::atomic<bool> closed_{false};  // read off the strand by SshConnection::is_open
  std::string close_reason_;
  HostKeyInfo host_key_;
  std::vector<std::string> auth_log_;
  std::string authenticated_with_;
  Clock::time_point last_rx_ = Clock::now();
  std::atomic<Clock::rep> rtt_ticks_{0};  // rtt(): written on the strand, read by any thread
  void note_open_time(Clock::time_point started);
  std::shared_ptr<Session> jump_;  // the previous hop, kept alive while this one lives
  std::function<void(const Error&)> on_dead_;
  std::shared_ptr<asio::steady_timer> keepalive_timer_;  // cancelled by close() so shutdown is prompt
  std::shared_ptr<Channel> pump_channel_;                // idle channel the keepalive loop reads
  std::vector<std::function<void()>> close_hooks_;
  bool send_stalled_ = false;  // a packet is half sent: others get BAD_USE until it completes
  bool send_failed_ = false;   // the socket itself refused a send (not just EAGAIN)
  bool wake_posted_ = false;   // a wake() is queued on the strand for data a recv brought in
  static constexpr std::size_t kReadAheadBytes = 256 << 10;
  std::vector<char> rx_ahead_;  // socket bytes read ahead of libssh2 (recv_hook): [rx_begin_, rx_end_)
  std::size_t rx_begin_ = 0;
  std::size_t rx_end_ = 0;
  bool rx_drained_ = false;     // the socket said EAGAIN since the last wait ended (recv_hook)
  bool rx_blocking_ = false;    // libssh2 runs blocking (only while freeing): no remembered EAGAIN
  int waiters_ = 0;            // coroutines inside wait_socket now
  Channel* pending_adjust_ = nullptr;  // whose half-sent window adjust blocks other sends
  asio::steady_timer cap_timer_;  // the shared 1 s cap of waits without a near deadline
  bool cap_armed_ = false;

 public:
  // libssh2 1.10 reports BAD_USE met inside a window adjust as SOCKET_SEND; only a send the
  // socket really refused is fatal.
  bool spurious_send_error(long rc) const;
  bool send_stalled() const { return send_stalled_; }
  // A channel's window adjust is half sent: any coroutine about to send finishes it first.
  void set_pending_adjust(Channel* channel) { pending_adjust_ = channel; }
  void forget_pending_adjust(const Channel* channel);
  void finish_pending_adjust();

 private:

  // libssh2 keeps one channel-open state machine per session: opens (exec, direct-tcpip, SFTP)
  // from different coroutines must not interleave across EAGAIN, so they take turns.
  friend class OpenTurn;
  asio::awaitable<Result<void>> lock_open(Clock::time_point deadline);
  void unlock_open();
  bool open_busy_ = false;
  std::deque<std::shared_ptr<asio::steady_timer>> open_waiters_;
};


// The libssh2 version string, for doctor.
std::string libssh2_version();

}  // namespace ferry::ssh

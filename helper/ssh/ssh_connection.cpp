// The blocking facade over Session (see ssh_connection.hpp).
#include "helper/ssh/ssh_connection.hpp"

#include <future>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

namespace ferry::ssh {
namespace {

using namespace std::chrono_literals;

// Runs `work` on `executor` and blocks the calling thread until it finishes.
template <class T>
T run_on(Executor executor, asio::awaitable<T> work) {
  std::promise<T> done;
  auto result = done.get_future();
  asio::co_spawn(executor, std::move(work), [&done](std::exception_ptr e, T value) {
    if (e) done.set_exception(e);
    else done.set_value(std::move(value));
  });
  return result.get();
}

asio::awaitable<Result<void>> do_connect(Executor ex, HostConfig host, SessionOptions options,
                                         std::shared_ptr<Session>* out) {
  auto s = co_await Session::connect(ex, host, std::move(options));
  if (!s) co_return std::unexpected(s.error());
  *out = std::move(*s);
  co_return Result<void>{};
}

asio::awaitable<Result<ExecResult>> do_exec(std::shared_ptr<Session> s, std::string command, Clock::time_point deadline,
                                            std::string input) {
  co_return co_await s->exec(std::move(command), deadline, std::move(input));
}

asio::awaitable<Result<void>> do_write_file(std::shared_ptr<Session> s, std::string path, std::string data, int mode,
                                            Clock::time_point deadline) {
  co_return co_await s->sftp_write_file(std::move(path), std::span<const char>(data.data(), data.size()), mode, deadline);
}

asio::awaitable<Result<std::shared_ptr<Channel>>> do_open(std::shared_ptr<Session> s, std::string command,
                                                          Clock::time_point deadline) {
  auto ch = co_await s->open_exec(std::move(command), deadline);
  if (ch) (*ch)->ignore_stderr();
  co_return ch;
}

asio::awaitable<Result<std::size_t>> do_read(std::shared_ptr<Channel> ch, std::span<char> buffer, Clock::time_point deadline) {
  co_return co_await ch->read_some(buffer, deadline, 0);
}

asio::awaitable<Result<void>> do_write(std::shared_ptr<Channel> ch, std::string_view bytes, Clock::time_point deadline) {
  co_return co_await ch->write_all(bytes, deadline);
}

asio::awaitable<Result<void>> do_eof(std::shared_ptr<Channel> ch) { co_return co_await ch->send_eof(Clock::now() + 5s); }

Error not_connected() { return make_error(Errc::kClosed, "not connected"); }

}  // namespace

SshStream::SshStream(Executor executor, std::shared_ptr<Channel> channel)
    : executor_(executor), channel_(std::move(channel)) {}

SshStream::~SshStream() {
  // The channel must die on its strand, where libssh2 is used.
  asio::post(executor_, [ch = std::move(channel_)]() mutable { ch.reset(); });
}

Result<std::size_t> SshStream::read_some(std::span<char> buffer, std::optional<Clock::time_point> deadline) {
  return run_on(executor_, do_read(channel_, buffer, deadline.value_or(Clock::time_point::max())));
}

Result<void> SshStream::write_all(std::string_view bytes, Clock::time_point deadline) {
  return run_on(executor_, do_write(channel_, bytes, deadline));
}

void SshStream::close_write() { (void)run_on(executor_, do_eof(channel_)); }

void SshStream::interrupt() {
  asio::post(executor_, [ch = channel_] { ch->interrupt(); });
}

void SshStream::end_after_exit(Clock::duration grace) {
  asio::post(executor_, [ch = channel_, grace] { ch->set_exit_grace(grace); });
}

SshConnection::SshConnection() : strand_(asio::make_strand(io_)) {
  work_.emplace(io_.get_executor());
  thread_ = std::thread([this] { io_.run(); });
}

SshConnection::~SshConnection() {
  close("connection released");
  asio::post(strand_, [this] { session_.reset(); });
  work_.reset();
  thread_.join();
}

Result<void> SshConnection::connect(const HostConfig& host, SessionOptions options) {
  auto r = run_on(strand_, do_connect(strand_, host, std::move(options), &session_));
  if (r && session_) {
    host_key_ = session_->host_key();
    authenticated_with_ = session_->authenticated_with();
  }
  return r;
}

Result<ExecResult> SshConnection::exec(std::string command, std::chrono::milliseconds timeout, std::string input) {
  if (!session_) return std::unexpected(not_connected());
  return run_on(strand_, do_exec(session_, std::move(command), Clock::now() + timeout, std::move(input)));
}

Result<void> SshConnection::write_file(std::string remote_path, std::string data, int mode,
                                       std::chrono::milliseconds timeout) {
  if (!session_) return std::unexpected(not_connected());
  return run_on(strand_, do_write_file(session_, std::move(remote_path), std::move(data), mode, Clock::now() + timeout));
}

Clock::duration SshConnection::rtt() const { return session_ ? session_->rtt() : Clock::duration::zero(); }

Result<std::unique_ptr<SshStream>> SshConnection::open_stream(std::string command, std::chrono::milliseconds timeout) {
  if (!session_) return std::unexpected(not_connected());
  auto ch = run_on(strand_, do_open(session_, std::move(command), Clock::now() + timeout));
  if (!ch) return std::unexpected(ch.error());
  return std::make_unique<SshStream>(strand_, std::move(*ch));
}

void SshConnection::start_keepalive(std::chrono::milliseconds interval, int count_max,
                                    std::function<void(const Error&)> on_dead) {
  asio::post(strand_, [this, interval, count_max, on_dead = std::move(on_dead)]() mutable {
    if (session_) session_->start_keepalive(interval, count_max, std::move(on_dead));
  });
}

namespace {

ForwardHandle handle_of(const std::shared_ptr<PortForward>& f) { return ForwardHandle{f, f->counters(), f->bound_port()}; }

asio::awaitable<Result<ForwardHandle>> do_remote_forward(std::shared_ptr<Session> s, std::string bind_host, int port,
                                                         std::string local_host, int local_port,
                                                         Clock::time_point deadline) {
  auto r = co_await RemoteForward::start(s, std::move(bind_host), port, std::move(local_host), local_port, deadline);
  if (!r) co_return std::unexpected(r.error());
  co_return handle_of(*r);
}

}  // namespace

Result<ForwardHandle> SshConnection::start_local_forward(net::NativeSocket listen_fd, std::string host, int port, ForwardTuning tuning,
                                                        std::shared_ptr<ConnectionHandoff> handoff) {
  if (!session_) return std::unexpected(not_connected());
  std::promise<Result<ForwardHandle>> done;
  auto f = done.get_future();
  asio::post(strand_, [&] {
    auto r = LocalForward::start(session_, listen_fd, std::move(host), port, tuning, std::move(handoff));
    if (r) done.set_value(handle_of(*r));
    else done.set_value(std::unexpected(r.error()));
  });
  return f.get();
}

Result<ForwardHandle> SshConnection::start_remote_forward(std::string bind_host, int port, std::string local_host,
                                                         int local_port, std::chrono::milliseconds timeout) {
  if (!session_) return std::unexpected(not_connected());
  return run_on(strand_, do_remote_forward(session_, std::move(bind_host), port, std::move(local_host), local_port,
                                           Clock::now() + timeout));
}

void SshConnection::stop_forward(const ForwardHandle& forward) {
  std::promise<void> done;
  auto f = done.get_future();
  asio::post(strand_, [&] {
    if (auto fw = forward.forward.lock()) fw->stop();
    done.set_value();
  });
  f.get();
}

void SshConnection::close(std::string why) {
  std::promise<void> done;
  auto f = done.get_future();
  asio::post(strand_, [this, &done, why = std::move(why)]() mutable {
    if (session_) session_->close(std::move(why));
    done.set_value();
  });
  f.get();
}

bool SshConnection::is_open() const {
  // Read without the strand: a stale answer only delays noticing a dead link by one call.
  return session_ && session_->is_open();
}

HostKeyInfo SshConnection::host_key() const { return host_key_; }
std::string SshConnection::authenticated_with() const { return authenticated_with_; }

}  // namespace ferry::ssh

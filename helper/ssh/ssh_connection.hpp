// A blocking facade over Session for callers that live on ordinary threads (the Endpoint, the
// CLI): it owns an io_context thread and a strand, and runs each operation there as a coroutine,
// waiting for its result. Never call it from its own io thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "helper/ssh/port_forward.hpp"
#include "helper/ssh/session.hpp"

namespace ferry::ssh {

// An exec channel as a blocking byte stream (the agent's stdin/stdout).
class SshStream {
 public:
  SshStream(Executor executor, std::shared_ptr<Channel> channel);
  ~SshStream();
  SshStream(const SshStream&) = delete;
  SshStream& operator=(const SshStream&) = delete;

  // Some bytes, 0 at EOF; Errc::kTimeout at the deadline, Errc::kInterrupted after interrupt().
  Result<std::size_t> read_some(std::span<char> buffer, std::optional<Clock::time_point> deadline);
  Result<void> write_all(std::string_view bytes, Clock::time_point deadline);
  void close_write();
  void interrupt();
  // Reads end (EOF) `grace` after the command's death was reported with no byte since, even while
  // a process it started holds its output open (Channel::set_exit_grace).
  void end_after_exit(Clock::duration grace);

 private:
  Executor executor_;
  std::shared_ptr<Channel> channel_;
};

class SshConnection {
 public:
  SshConnection();
  ~SshConnection();
  SshConnection(const SshConnection&) = delete;
  SshConnection& operator=(const SshConnection&) = delete;

  Result<void> connect(const HostConfig& host, SessionOptions options);
  Result<ExecResult> exec(std::string command, std::chrono::milliseconds timeout, std::string input = {});
  Result<void> write_file(std::string remote_path, std::string data, int mode, std::chrono::milliseconds timeout);
  // An exec channel as a stream; its stderr is discarded (redirect it on the remote to keep it).
  Result<std::unique_ptr<SshStream>> open_stream(std::string command, std::chrono::milliseconds timeout);
  // on_dead runs on the io thread.
  void start_keepalive(std::chrono::milliseconds interval, int count_max, std::function<void(const Error&)> on_dead);
  // ssh -L from a listening socket here (dup'ed: the caller's socket stays open after the
  // forward stops) to host:port as the server sees it.
  Result<ForwardHandle> start_local_forward(net::NativeSocket listen_fd, std::string host, int port, ForwardTuning tuning = {},
                                            std::shared_ptr<ConnectionHandoff> handoff = nullptr);
  // ssh -R: the server listens on bind_host:port (0: it picks; see bound_port()).
  Result<ForwardHandle> start_remote_forward(std::string bind_host, int port, std::string local_host, int local_port,
                                             std::chrono::milliseconds timeout);
  // Stops a forward and waits until its listener is closed. Forwards also stop with the session.
  void stop_forward(const ForwardHandle& forward);
  void close(std::string why = "closed");
  bool is_open() const;

  // Valid after connect().
  HostKeyInfo host_key() const;
  std::string authenticated_with() const;
  // The link's round trip as channel opens measured it (Session::rtt); zero before any open.
  Clock::duration rtt() const;

 private:
  asio::io_context io_;
  Executor strand_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::shared_ptr<Session> session_;
  HostKeyInfo host_key_;
  std::string authenticated_with_;
};

}  // namespace ferry::ssh

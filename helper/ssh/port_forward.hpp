// Port forwards over one Session (ssh -L and ssh -R): a forward owns its listener and the channel
// bridges of its live connections, all on the session's strand. A forward stops when asked or when
// its session closes; the caller starts a new one on the next session (SshEndpoint does, after a
// reconnect).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "helper/ssh/session.hpp"

namespace ferry::ssh {

struct ForwardTuning {
  std::size_t buffer_bytes = 256 << 10;  // per direction per connection
  // Receive window of direct-tcpip channels: OpenSSH's for ssh -L. libssh2 reads everything the
  // window lets in into malloc'd packets before handing any out, so a bigger one (16 MiB) made a
  // lone download 2-5x slower here (bench/results/tunnel.md).
  std::uint32_t window_bytes = 2 << 20;
};

// Counters another thread may read (tunnel/list).
struct ForwardCounters {
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> live{0};
  std::atomic<std::uint64_t> failed{0};  // connections whose channel or local connect failed
  std::atomic<std::uint64_t> handed_off{0};  // accepted connections another transport carried
  std::atomic<std::uint64_t> bytes{0};  // over the session's channels, both ways
};

// Another transport that may carry a local forward's accepted connections instead of a channel
// of its session (SshEndpoint's OpenSSH tunnel master on a short link: remote/mux_tunnel.hpp).
class ConnectionHandoff {
 public:
  virtual ~ConnectionHandoff() = default;
  // Takes the connected socket `fd` (and counts it in `counters`) if it can carry it now; false
  // leaves `fd` to the session. Called on the session's strand: must not wait on the network.
  virtual bool take(net::NativeSocket fd, const std::shared_ptr<ForwardCounters>& counters) = 0;
  // Ends every connection taken; called when the forward stops.
  virtual void stop() = 0;
};

// The live bridges of one forward, so stopping the forward ends them all.
class BridgeSet {
 public:
  explicit BridgeSet(std::shared_ptr<ForwardCounters> counters) : counters_(std::move(counters)) {}
  // Bridges `channel` with the connected socket `end` until both directions end; `owner` is kept
  // alive until then.
  void add(const std::shared_ptr<Session>& session, std::shared_ptr<Channel> channel, std::shared_ptr<StreamSocket> end,
           std::size_t buffer_bytes, std::shared_ptr<void> owner);
  // Ends every live bridge (on the strand).
  void close_all();

 private:
  struct Bridge {
    std::shared_ptr<Channel> channel;
    std::shared_ptr<StreamSocket> end;
  };
  std::shared_ptr<ForwardCounters> counters_;
  std::set<std::shared_ptr<Bridge>> live_;
};

class PortForward {
 public:
  virtual ~PortForward() = default;
  // Closes the listener and every live connection. Call on the session's strand; idempotent.
  virtual void stop() = 0;
  // The port that listens: here for a local forward, on the server for a remote one.
  virtual int bound_port() const = 0;
  // Shared, so a reader on another thread never holds the forward itself (it must die on the strand).
  std::shared_ptr<const ForwardCounters> counters() const { return counters_; }

 protected:
  std::shared_ptr<ForwardCounters> counters_ = std::make_shared<ForwardCounters>();
};

// What a thread off the strand keeps of a forward: the forward lives on the strand, kept alive by
// its accept loop and bridges until it stops.
struct ForwardHandle {
  std::weak_ptr<PortForward> forward;
  std::shared_ptr<const ForwardCounters> counters;
  int bound_port = 0;
};

// ssh -L: connections accepted on a listening socket here each open a direct-tcpip channel to
// host:port as seen from the server.
class LocalForward final : public PortForward, public std::enable_shared_from_this<LocalForward> {
 public:
  // `listen_fd` listens already; it is dup'ed, so the caller's socket stays open (and keeps
  // queueing connections) after this forward stops. On the strand.
  // `handoff`, when given, is offered each accepted connection first.
  static Result<std::shared_ptr<LocalForward>> start(std::shared_ptr<Session> session, net::NativeSocket listen_fd,
                                                     std::string host,
                                                     int port, ForwardTuning tuning = {},
                                                     std::shared_ptr<ConnectionHandoff> handoff = nullptr);
  void stop() override;
  int bound_port() const override { return bound_port_; }

  LocalForward(std::shared_ptr<Session> session, std::string host, int port, ForwardTuning tuning);

 private:
  // `self` in the frame: co_spawn starts the body later, when only the coroutine holds the forward.
  asio::awaitable<void> accept_loop(std::shared_ptr<LocalForward> self);
  asio::awaitable<void> serve(std::shared_ptr<StreamSocket> sock, std::shared_ptr<LocalForward> self);

  std::shared_ptr<Session> session_;
  std::string host_;
  int port_;
  ForwardTuning tuning_;
  std::shared_ptr<ConnectionHandoff> handoff_;
  int bound_port_ = 0;
  asio::ip::tcp::acceptor acceptor_;
  BridgeSet bridges_{counters_};
  bool stopped_ = false;
};

// ssh -R: the server listens on bind_host:port and each connection there is bridged to
// local_host:local_port here.
class RemoteForward final : public PortForward, public std::enable_shared_from_this<RemoteForward> {
 public:
  static asio::awaitable<Result<std::shared_ptr<RemoteForward>>> start(std::shared_ptr<Session> session,
                                                                       std::string bind_host, int port,
                                                                       std::string local_host, int local_port,
                                                                       Clock::time_point deadline,
                                                                       ForwardTuning tuning = {});
  void stop() override;
  int bound_port() const override { return bound_port_; }

  RemoteForward(std::shared_ptr<Session> session, std::string local_host, int local_port, ForwardTuning tuning);

 private:
  asio::awaitable<void> accept_loop(std::shared_ptr<RemoteForward> self);
  asio::awaitable<void> serve(std::shared_ptr<Channel> channel, std::shared_ptr<RemoteForward> self);

  std::shared_ptr<Session> session_;
  std::string local_host_;
  int local_port_;
  ForwardTuning tuning_;
  int bound_port_ = 0;
  _LIBSSH2_LISTENER* listener_ = nullptr;
  BridgeSet bridges_{counters_};
  bool stopped_ = false;
};

}  // namespace ferry::ssh

// Tunnels whose far end is an agent rather than sshd (tcp/* on the agent wire,
// protocol/messages_tcp.hpp), for an endpoint with no sshd under it: an agent inside a Slurm job
// (job_endpoint.hpp). A local tunnel accepts here and asks the agent's tcp/connect; a reverse one
// has the agent listen on its loopback (tcp/listen) and connects here for each tcp/accepted. Either
// way a SocketPump carries each connection, and one subscription to the endpoint routes the
// agent's tcp/data, tcp/ack and tcp/eof to the pumps.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "helper/remote/endpoint.hpp"
#include "helper/remote/loopback_listener.hpp"

namespace ferry::remote {

class AgentTunnel {
 public:
  // Local: accepts on `listener` (taken over); each connection goes to host:port as the agent sees it.
  AgentTunnel(Endpoint& agent, LoopbackListener listener, std::string host, int port);
  // Reverse: the agent's listener `listener_id` (tcp/listen's); each connection it accepts comes
  // to local_host:local_port here.
  AgentTunnel(Endpoint& agent, std::int64_t listener_id, std::string local_host, int local_port);
  ~AgentTunnel();
  AgentTunnel(const AgentTunnel&) = delete;
  AgentTunnel& operator=(const AgentTunnel&) = delete;

  int port() const { return port_; }  // local: the port listening here
  std::uint64_t accepted() const { return accepted_.load(); }
  std::uint64_t live() const;
  // Stops accepting (a reverse one: tcp/unlisten) and ends every connection; idempotent.
  void close();

 private:
  struct Conn;
  void accept_loop();
  void reverse_loop();
  void serve(net::NativeSocket client);
  void serve_accepted(std::int64_t id);
  void start_pump(net::NativeSocket s, std::int64_t id);
  void route(const protocol::Notification& note);
  void reap();

  Endpoint& agent_;
  const bool reverse_;
  LoopbackListener listener_;
  int port_ = 0;
  std::string host_;  // local: the agent's side; reverse: this side
  int target_port_;
  std::int64_t listener_id_ = 0;  // reverse
  net::NativeSocket wake_[2] = {net::kNoSocket, net::kNoSocket};  // a byte on [1] wakes the accept loop
  std::atomic<bool> closing_{false};
  std::atomic<std::uint64_t> accepted_{0};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::int64_t> incoming_;                     // reverse: accepted by the agent, not yet connected here
  std::map<std::int64_t, std::shared_ptr<Conn>> conns_;  // by the agent's connection id
  std::vector<std::shared_ptr<Conn>> done_;               // ended; destroyed (joined) off their own threads
  Subscription subscription_;
  std::thread thread_;
};

}  // namespace ferry::remote

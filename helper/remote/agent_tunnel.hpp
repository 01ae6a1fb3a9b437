// A local tunnel whose connections the agent opens where it runs (tcp/* on the agent wire,
// protocol/messages_tcp.hpp), for an endpoint with no sshd under it: an agent inside a Slurm job
// (job_endpoint.hpp). Each accepted connection asks tcp/connect, then a SocketPump carries it; one
// subscription to the endpoint routes the agent's tcp/data, tcp/ack and tcp/eof to the pumps.
#pragma once

#include <atomic>
#include <cstdint>
#include <expected>
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
  // Starts accepting on `listener` (taken over); each connection goes to host:port as the agent
  // sees it. `agent` must outlive the tunnel.
  AgentTunnel(Endpoint& agent, LoopbackListener listener, std::string host, int port);
  ~AgentTunnel();
  AgentTunnel(const AgentTunnel&) = delete;
  AgentTunnel& operator=(const AgentTunnel&) = delete;

  int port() const { return port_; }
  std::uint64_t accepted() const { return accepted_.load(); }
  std::uint64_t live() const;
  // Stops accepting and ends every connection; idempotent.
  void close();

 private:
  struct Conn;
  void accept_loop();
  void serve(int client);
  void route(const protocol::Notification& note);
  void reap();

  Endpoint& agent_;
  LoopbackListener listener_;
  int port_ = 0;
  std::string host_;
  int target_port_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> closing_{false};
  std::atomic<std::uint64_t> accepted_{0};
  mutable std::mutex mutex_;
  std::map<std::int64_t, std::shared_ptr<Conn>> conns_;  // by the agent's connection id
  std::vector<std::shared_ptr<Conn>> done_;               // ended; destroyed (joined) off their own threads
  Subscription subscription_;
  std::thread acceptor_;
};

}  // namespace ferry::remote

// tcp/* on the agent: TCP connections the agent opens where it runs (tcp/connect) or accepts on
// its loopback (tcp/listen: a reverse tunnel), carried over its own wire (protocol/messages_tcp.hpp),
// one SocketPump each. This is how tunnels reach a Slurm job's compute node, where ferry runs an
// agent inside the job but no sshd listens.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "protocol/binding_table.hpp"
#include "remote-runtime/agent/run/frame_writer.hpp"

namespace ferry::agent {

class TcpRelayMethods {
 public:
  explicit TcpRelayMethods(std::shared_ptr<run::FrameWriter> writer);
  ~TcpRelayMethods();
  TcpRelayMethods(const TcpRelayMethods&) = delete;
  TcpRelayMethods& operator=(const TcpRelayMethods&) = delete;

  // tcp/connect and tcp/listen (requests); tcp/data, tcp/ack, tcp/eof, tcp/close, tcp/unlisten
  // (notifications).
  void bind(protocol::BindingTable& table);
  // Ends every connection and listener (the link is gone).
  void close_all();
  std::size_t open_connections();

 private:
  struct Conn;
  struct Listener;
  // A connected socket taken over: its id, its pump started (reading nothing before the helper's grant).
  std::int64_t adopt(int fd);
  void accept_loop(Listener& listener);
  void close_listener(std::int64_t id);
  std::shared_ptr<Conn> find(std::int64_t id);
  void finished(std::int64_t id);
  void reap();

  std::shared_ptr<run::FrameWriter> writer_;
  std::mutex mutex_;
  std::map<std::int64_t, std::shared_ptr<Conn>> conns_;
  std::vector<std::shared_ptr<Conn>> done_;  // ended; joined by the next call (a pump never joins itself)
  std::map<std::int64_t, std::unique_ptr<Listener>> listeners_;
  std::int64_t next_id_ = 1;
};

}  // namespace ferry::agent

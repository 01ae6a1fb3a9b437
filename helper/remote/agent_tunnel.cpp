// AgentTunnel, the same on POSIX sockets and Winsock (common/socket_calls.hpp): one thread per
// tunnel (the accept loop, woken to stop by a byte on a socket pair, or for a reverse tunnel the
// loop that connects here for each tcp/accepted), and a SocketPump per connection whose peer is
// the agent (tcp/* notifications).
#include "helper/remote/agent_tunnel.hpp"

#include <spdlog/spdlog.h>

#include "common/socket_pump.hpp"
#include "protocol/messages_tcp.hpp"

namespace ferry::remote {

namespace method = protocol::method;

struct AgentTunnel::Conn {
  net::NativeSocket socket = net::kNoSocket;
  std::unique_ptr<SocketPump> pump;
  ~Conn() {
    pump.reset();  // its threads use the socket
    if (socket != net::kNoSocket) net::socket_close(socket);
  }
};

AgentTunnel::AgentTunnel(Endpoint& agent, LoopbackListener listener, std::string host, int port)
    : agent_(agent), reverse_(false), listener_(std::move(listener)), port_(listener_.port()), host_(std::move(host)), target_port_(port) {
  if (net::socket_pair(wake_) != 0) wake_[0] = wake_[1] = net::kNoSocket;
  subscription_ = agent_.subscribe([this](const protocol::Notification& note) { route(note); });
  thread_ = std::thread([this] { accept_loop(); });
}

AgentTunnel::AgentTunnel(Endpoint& agent, std::int64_t listener_id, std::string local_host, int local_port)
    : agent_(agent), reverse_(true), host_(std::move(local_host)), target_port_(local_port), listener_id_(listener_id) {
  subscription_ = agent_.subscribe([this](const protocol::Notification& note) { route(note); });
  thread_ = std::thread([this] { reverse_loop(); });
}

AgentTunnel::~AgentTunnel() {
  close();
  for (auto s : wake_)
    if (s != net::kNoSocket) net::socket_close(s);
}

std::uint64_t AgentTunnel::live() const {
  std::lock_guard lk(mutex_);
  return conns_.size();
}

void AgentTunnel::close() {
  if (closing_.exchange(true)) return;
  if (wake_[1] != net::kNoSocket) (void)net::socket_send(wake_[1], "x", 1);
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (reverse_) (void)agent_.notify(method::kTcpUnlisten, to_json(protocol::TcpUnlistenParams{listener_id_}));
  subscription_.reset();  // no handler runs after this: the pumps can go
  std::map<std::int64_t, std::shared_ptr<Conn>> conns;
  std::deque<std::int64_t> waiting;
  {
    std::lock_guard lk(mutex_);
    conns.swap(conns_);
    waiting.swap(incoming_);
  }
  for (auto& [id, c] : conns) {
    c->pump->stop();
    (void)agent_.notify(method::kTcpClose, to_json(protocol::TcpIdParams{id}));
  }
  for (auto id : waiting) (void)agent_.notify(method::kTcpClose, to_json(protocol::TcpIdParams{id}));
  conns.clear();
  reap();
  listener_.close();
}

// Notifications come on the endpoint's reader thread: hand over, never block.
void AgentTunnel::route(const protocol::Notification& note) {
  if (!note.method.starts_with("tcp/")) return;
  if (note.method == method::kTcpAccepted) {
    protocol::TcpAcceptedParams p;
    if (!reverse_ || from_json(note.params, p) || p.listener_id != listener_id_) return;
    {
      std::lock_guard lk(mutex_);
      incoming_.push_back(p.id);
    }
    cv_.notify_all();
    return;
  }
  std::int64_t id = 0;
  if (auto it = note.params.find("id"); it != note.params.end() && it->is_number_integer()) id = it->get<std::int64_t>();
  std::shared_ptr<Conn> c;
  {
    std::lock_guard lk(mutex_);
    if (auto it = conns_.find(id); it != conns_.end()) c = it->second;
  }
  if (!c) return;  // another tunnel's connection, or one that ended
  if (note.method == method::kTcpData) {
    protocol::TcpDataParams p;
    if (!from_json(note.params, p)) c->pump->on_data(std::move(p.data));
  } else if (note.method == method::kTcpAck) {
    protocol::TcpAckParams p;
    if (!from_json(note.params, p)) c->pump->on_ack(static_cast<std::uint64_t>(p.bytes));
  } else if (note.method == method::kTcpEof) {
    c->pump->on_eof();
  } else if (note.method == method::kTcpClose) {  // the agent's end was cut short
    c->pump->stop();
  }
}

void AgentTunnel::reap() {
  std::vector<std::shared_ptr<Conn>> done;
  {
    std::lock_guard lk(mutex_);
    done.swap(done_);
  }
}

void AgentTunnel::accept_loop() {
  const net::NativeSocket waited[2] = {listener_.fd(), wake_[0]};
  while (!closing_.load()) {
    if (wake_[0] == net::kNoSocket || net::wait_readable(waited) != 0) break;
    reap();
    const net::NativeSocket client = net::socket_accept(listener_.fd());
    if (client == net::kNoSocket) continue;
    ++accepted_;
    serve(client);
  }
}

void AgentTunnel::reverse_loop() {
  for (;;) {
    std::int64_t id = 0;
    {
      std::unique_lock lk(mutex_);
      cv_.wait(lk, [&] { return closing_.load() || !incoming_.empty(); });
      if (closing_.load()) return;
      id = incoming_.front();
      incoming_.pop_front();
    }
    reap();
    ++accepted_;
    serve_accepted(id);
  }
}

// A local tunnel's connection: the agent connects there, then the pump starts.
void AgentTunnel::serve(net::NativeSocket client) {
  auto r = agent_.call(method::kTcpConnect, to_json(protocol::TcpConnectParams{host_, target_port_}), std::chrono::seconds(15));
  protocol::TcpConnectResult connected;
  if (!r || from_json(*r, connected)) {
    spdlog::warn("tunnel {} -> {}:{}: {}", port_, host_, target_port_, r ? "a reply without an id" : r.error().message);
    net::socket_close(client);  // the client sees its connection closed, as with ssh -L when the far side refuses
    return;
  }
  start_pump(client, connected.id);
}

// A reverse tunnel's connection, accepted by the agent: connect here, then the pump starts.
void AgentTunnel::serve_accepted(std::int64_t id) {
  const net::NativeSocket s = net::connect_tcp(host_, target_port_);
  if (s == net::kNoSocket) {
    spdlog::warn("reverse tunnel -> {}:{}: nothing listens here", host_, target_port_);
    (void)agent_.notify(method::kTcpClose, to_json(protocol::TcpIdParams{id}));  // the node's client sees it closed
    return;
  }
  start_pump(s, id);
}

void AgentTunnel::start_pump(net::NativeSocket s, std::int64_t id) {
  net::socket_no_delay(s);
  auto conn = std::make_shared<Conn>();
  conn->socket = s;
  Endpoint& agent = agent_;
  SocketPump::Peer peer{
      [&agent, id](std::span<const std::uint8_t> d) {
        return agent.notify(method::kTcpData, protocol::tcp_data_params(id, d.data(), d.size())).has_value();
      },
      [&agent, id](std::uint64_t n) {
        return agent.notify(method::kTcpAck, to_json(protocol::TcpAckParams{id, static_cast<std::int64_t>(n)})).has_value();
      },
      [&agent, id] { return agent.notify(method::kTcpEof, to_json(protocol::TcpIdParams{id})).has_value(); },
      [this, id](bool clean) {
        // A clean end needs no word: the agent's end finishes by itself once it has written
        // everything (a close now would cut what it still holds).
        if (!clean) (void)agent_.notify(method::kTcpClose, to_json(protocol::TcpIdParams{id}));
        std::lock_guard lk(mutex_);
        if (auto it = conns_.find(id); it != conns_.end()) {
          done_.push_back(std::move(it->second));
          conns_.erase(it);
        }
      }};
  conn->pump = std::make_unique<SocketPump>(native_socket_calls(s), std::move(peer));
  {
    std::lock_guard lk(mutex_);
    conns_[id] = conn;
  }
  conn->pump->start();
  // The agent reads nothing from its socket until this grant: the id is known here now.
  (void)agent_.notify(method::kTcpAck, to_json(protocol::TcpAckParams{id, static_cast<std::int64_t>(kPumpWindow)}));
}

}  // namespace ferry::remote

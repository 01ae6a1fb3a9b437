// AgentTunnel on Windows: not there yet (a compute node's tunnels need the POSIX helper for now);
// the listener closes at once, so a client sees its connection refused rather than hanging.
#include "helper/remote/agent_tunnel.hpp"

namespace ferry::remote {

struct AgentTunnel::Conn {};

AgentTunnel::AgentTunnel(Endpoint& agent, LoopbackListener listener, std::string host, int port)
    : agent_(agent), reverse_(false), listener_(std::move(listener)), port_(listener_.port()), host_(std::move(host)), target_port_(port) {
  listener_.close();
}
AgentTunnel::AgentTunnel(Endpoint& agent, std::int64_t listener_id, std::string local_host, int local_port)
    : agent_(agent), reverse_(true), host_(std::move(local_host)), target_port_(local_port), listener_id_(listener_id) {}
AgentTunnel::~AgentTunnel() = default;
std::uint64_t AgentTunnel::live() const { return 0; }
void AgentTunnel::close() { closing_ = true; }
void AgentTunnel::route(const protocol::Notification&) {}
void AgentTunnel::reap() {}
void AgentTunnel::accept_loop() {}
void AgentTunnel::reverse_loop() {}
void AgentTunnel::serve(int) {}
void AgentTunnel::serve_accepted(std::int64_t) {}
void AgentTunnel::start_pump(int, std::int64_t) {}

}  // namespace ferry::remote

// AgentTunnel on Windows: not there yet (a compute node's tunnels need the POSIX helper for now);
// the listener closes at once, so a client sees its connection refused rather than hanging.
#include "helper/remote/agent_tunnel.hpp"

namespace ferry::remote {

struct AgentTunnel::Conn {};

AgentTunnel::AgentTunnel(Endpoint& agent, LoopbackListener listener, std::string host, int port)
    : agent_(agent), listener_(std::move(listener)), port_(listener_.port()), host_(std::move(host)), target_port_(port) {
  listener_.close();
}
AgentTunnel::~AgentTunnel() = default;
std::uint64_t AgentTunnel::live() const { return 0; }
void AgentTunnel::close() { closing_ = true; }
void AgentTunnel::route(const protocol::Notification&) {}
void AgentTunnel::reap() {}
void AgentTunnel::accept_loop() {}
void AgentTunnel::serve(int) {}

}  // namespace ferry::remote

// The agent's methods: one message in, at most one reply out. No I/O on the wire here, so the
// same service can sit behind stdio (LocalEndpoint, SSH exec channel) or a test harness.
#pragma once

#include <optional>

#include "protocol/jsonrpc.hpp"
#include "remote-runtime/agent/root_path.hpp"

namespace ferry::agent {

class AgentService {
 public:
  explicit AgentService(RootPath root) : root_(std::move(root)) {}

  // A reply for requests (and for messages that could not be identified), nothing otherwise.
  std::optional<protocol::Response> handle(const protocol::Message& message);

  // Set once agent/shutdown has been answered: the caller flushes and exits.
  bool shutdown_requested() const { return shutdown_; }

 private:
  protocol::Response dispatch(const protocol::Request& request);
  RootPath root_;
  bool shutdown_ = false;
};

// Upper bound on agent/ping's delayMs, so a peer cannot park the agent for long.
inline constexpr int kMaxPingDelayMs = 60'000;

}  // namespace ferry::agent

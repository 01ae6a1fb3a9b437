// The agent's methods: one message in, at most one reply out. No I/O on the wire here, so the
// same service can sit behind stdio (LocalEndpoint, SSH exec channel) or a test harness.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "protocol/jsonrpc.hpp"
#include "remote-runtime/agent/root_path.hpp"

namespace ferry::agent {

class AgentService {
 public:
  explicit AgentService(RootPath root) : root_(std::move(root)) {}

  // More methods (e.g. SyncMethods): asked in order for any method not built in; nullopt = not theirs.
  using MethodHandler = std::function<std::optional<protocol::Response>(const protocol::Request&)>;
  void add_methods(MethodHandler handler) { extra_.push_back(std::move(handler)); }

  // A reply for requests (and for messages that could not be identified), nothing otherwise.
  std::optional<protocol::Response> handle(const protocol::Message& message);

  // Set once agent/shutdown has been answered: the caller flushes and exits.
  bool shutdown_requested() const { return shutdown_; }

 private:
  protocol::Response dispatch(const protocol::Request& request);
  RootPath root_;
  bool shutdown_ = false;
  std::vector<MethodHandler> extra_;
};

// Upper bound on agent/ping's delayMs, so a peer cannot park the agent for long.
inline constexpr int kMaxPingDelayMs = 60'000;

}  // namespace ferry::agent

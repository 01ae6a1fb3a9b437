// The agent's own methods (agent/hello, agent/ping, fs/stat, agent/shutdown), bound typed
// (protocol/messages_agent.hpp) into the one BindingTable the agent's Dispatcher serves, beside
// the sync, run, gpu, autostop and spot families. No I/O on the wire here.
#pragma once

#include <atomic>

#include "protocol/binding_table.hpp"
#include "protocol/messages_agent.hpp"
#include "remote-runtime/agent/root_path.hpp"

namespace ferry::agent {

class AgentService {
 public:
  explicit AgentService(RootPath root) : root_(std::move(root)) {}
  AgentService(const AgentService&) = delete;
  AgentService& operator=(const AgentService&) = delete;

  // Binds the four methods; `this` must outlive the table's use.
  void bind(protocol::BindingTable& table);

  // Set once agent/shutdown has been handled (its reply is written before the dispatcher
  // returns): the reader then drains and exits.
  bool shutdown_requested() const { return shutdown_.load(); }

  const RootPath& root() const { return root_; }

 private:
  RootPath root_;
  std::atomic<bool> shutdown_{false};
};

inline constexpr std::int64_t kMaxPingDelayMs = protocol::kMaxAgentPingDelayMs;

}  // namespace ferry::agent

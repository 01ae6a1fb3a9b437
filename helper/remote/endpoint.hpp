// Endpoint: where the agent runs and how ferry talks to it, behind one interface (as mutagen
// does): LocalEndpoint runs ferry-agent as a subprocess; SshEndpoint will run it over an SSH exec
// channel. Both speak the agent wire (protocol/agent_wire.hpp) over a ByteStream.
#pragma once

#include <chrono>
#include <expected>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "helper/remote/forward_spec.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::remote {

using protocol::json;
using protocol::ResponseError;

inline constexpr std::chrono::milliseconds kDefaultCallTimeout{30'000};
inline constexpr std::chrono::milliseconds kDefaultHandshakeTimeout{15'000};

// What the handshake learned: from the magic line and from agent/hello.
struct AgentInfo {
  int protocol_version = 0;
  std::string version;
  long long pid = 0;
  std::string root;      // the agent's root directory, as the agent sees it
  std::string os;        // uname sysname, e.g. "Linux"
  std::string arch;      // uname machine, e.g. "x86_64"
  std::string hostname;
};

using NotificationHandler = std::function<void(const protocol::Notification&)>;

class Endpoint {
 public:
  virtual ~Endpoint() = default;

  // Starts the agent, reads its magic line (skipping banner noise), and exchanges agent/hello.
  // A protocol mismatch is error_code::kAgentVersionMismatch with the message
  // "agent speaks protocol N, this ferry speaks M".
  virtual std::expected<AgentInfo, ResponseError> connect(
      std::chrono::milliseconds timeout = kDefaultHandshakeTimeout) = 0;

  // One request; safe from many threads at once, all in flight together. Fails with
  // kAgentUnavailable when the agent is gone, kRequestCancelled when the timeout passes. The
  // timeout covers the wait for the reply; sending blocks while the agent's input pipe is full.
  virtual std::expected<json, ResponseError> call(std::string_view method, json params,
                                                  std::chrono::milliseconds timeout = kDefaultCallTimeout) = 0;

  virtual std::expected<void, ResponseError> notify(std::string_view method, json params) = 0;

  // Called on the endpoint's reader thread for each notification from the agent. It must not
  // wait for a call() on the same endpoint: replies are read by that very thread.
  virtual void set_notification_handler(NotificationHandler handler) = 0;

  // Valid after a successful connect().
  virtual const AgentInfo& info() const = 0;
  virtual bool connected() const = 0;

  // Stops the agent and releases everything; calls still waiting fail. Idempotent.
  virtual void close() = 0;

  // For messages: "local sandbox /home/u/.cache/ferry/local/demo".
  virtual std::string description() const = 0;

  // Tunnels (docs/tunnels.md). open_forward binds the listener (loopback only; port 0 reports the
  // chosen port in bound_port) and forwards until close_forward or close(); an SSH endpoint starts
  // its tunnels again after every reconnect. Errors: kInvalidParams for a refused spec, kIoError
  // for a port that cannot be bound, kAgentUnavailable when there is no link.
  virtual std::expected<ForwardInfo, ResponseError> open_forward(const ForwardSpec& spec) {
    (void)spec;
    return std::unexpected(ResponseError{protocol::error_code::kMethodNotFound, "tunnels are not supported by " + description(), {}});
  }
  virtual std::expected<void, ResponseError> close_forward(int id) {
    return std::unexpected(ResponseError{protocol::error_code::kInvalidParams, "no tunnel " + std::to_string(id), {}});
  }
  virtual std::vector<ForwardInfo> list_forwards() const { return {}; }
};

}  // namespace ferry::remote

// Endpoint: where the agent runs and how ferry talks to it, behind one interface (as mutagen
// does): LocalEndpoint runs ferry-agent as a subprocess; SshEndpoint runs it over an SSH exec
// channel. Both speak the agent wire (protocol/agent_wire.hpp) over a ByteStream.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "helper/remote/forward_spec.hpp"
#include "protocol/error.hpp"
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

// A failed Endpoint::call as an Error under the engine's own words. A call takes no cancellation
// token, so its -32800 means no reply in time (or a link still reconnecting): to the caller the
// agent is lost (reconnect and retry), not a request the user cancelled.
Error call_error(const ResponseError& e, std::string message);

// The agent's notifications go to every subscriber: one link serves the runs, trainings and
// debug sessions of a project at once (`ferry serve` opens one per project).
class NotificationFanout {
 public:
  std::uint64_t add(NotificationHandler handler);
  // After it returns, the handler gets no more calls. Never from inside a handler.
  void remove(std::uint64_t id);
  // Calls every handler in subscription order, under the lock (that is what makes remove()'s
  // promise): handlers must not subscribe or unsubscribe.
  void deliver(const protocol::Notification& note) const;
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::uint64_t, NotificationHandler> handlers_;
  std::uint64_t next_id_ = 1;
};

// Holds one subscription; destroying (or reset()ting) it unsubscribes.
class Subscription {
 public:
  Subscription() = default;
  Subscription(std::weak_ptr<NotificationFanout> fanout, std::uint64_t id) : fanout_(std::move(fanout)), id_(id) {}
  ~Subscription() { reset(); }
  Subscription(Subscription&& other) noexcept : fanout_(std::move(other.fanout_)), id_(other.id_) { other.id_ = 0; }
  Subscription& operator=(Subscription&& other) noexcept;
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  void reset();

 private:
  std::weak_ptr<NotificationFanout> fanout_;
  std::uint64_t id_ = 0;
};

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

  // `handler` is called on the endpoint's reader thread for each notification from the agent,
  // until the returned Subscription goes. It must not wait for a call() on the same endpoint
  // (replies are read by that very thread). Wrappers of another endpoint forward this.
  [[nodiscard]] virtual Subscription subscribe(NotificationHandler handler) {
    return Subscription(fanout_, fanout_->add(std::move(handler)));
  }

  // Valid after a successful connect().
  virtual const AgentInfo& info() const = 0;
  virtual bool connected() const = 0;
  // Whether a link that went down comes back by itself (an SSH endpoint with reconnect on): a
  // follower waits for it; otherwise losing the link ends what was waiting on it.
  virtual bool reconnects() const { return false; }

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

  // Bulk lanes (docs/sync.md, "Long links"): extra agents on channels of their own, so the parts of
  // one big file travel under several SSH windows at once. bulk_lanes() says how many this link
  // has or is opening (0: none; it starts opening them on the first call and returns at once);
  // call_lane sends on lane `lane` and fails with kAgentUnavailable while that lane is not up,
  // so the caller sends on call() instead. On a short link the lanes, if any, are there to spend
  // less CPU per byte than the link (lanes_save_cpu): then a pull's big files go there too.
  // A transfer that will likely want lanes (a push with a big new file) is coming; callable
  // before or during connect(), from another thread. An endpoint may get ready for the lanes early.
  virtual void expect_bulk() {}
  virtual std::size_t bulk_lanes() { return 0; }
  virtual bool lanes_save_cpu() { return false; }
  virtual std::size_t live_lanes() const { return 0; }  // lanes up and answering now
  virtual std::expected<json, ResponseError> call_lane(std::size_t lane, std::string_view method, json params,
                                                       std::chrono::milliseconds timeout = kDefaultCallTimeout) {
    (void)lane, (void)params, (void)timeout;
    return std::unexpected(ResponseError{protocol::error_code::kAgentUnavailable, std::string(method) + ": no bulk lanes", {}});
  }

 protected:
  // What implementations give their AgentLink: delivers to the subscribers of the moment.
  NotificationHandler fanout_handler() const {
    return [fanout = fanout_](const protocol::Notification& note) { fanout->deliver(note); };
  }
  std::size_t subscriber_count() const { return fanout_->size(); }

 private:
  std::shared_ptr<NotificationFanout> fanout_ = std::make_shared<NotificationFanout>();
};

}  // namespace ferry::remote

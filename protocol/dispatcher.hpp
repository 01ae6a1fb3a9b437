// The dispatch state machine, free of I/O so either wire (JSON to the IDE, CBOR to the agent)
// and the fuzzer can drive it: decodes bodies, answers batches, enforces the LSP lifecycle,
// routes to the binding table, tracks in-flight requests for $/cancelRequest and replies to
// each request exactly once. The transport supplies the hooks (how to send, where and when to
// run handlers, what to do on exit).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "protocol/binding_table.hpp"
#include "protocol/codec.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/reply_once.hpp"

namespace ferry::protocol {

enum class LogLevel { debug, info, warn, error };

struct DispatcherHooks {
  // One outgoing message (a response, a batch array or a notification). Called from the
  // reading thread and from workers: the transport serialises writes.
  std::function<void(const json& message)> send;
  // Runs a task on a worker. The transport must run (or drain) every posted task before it
  // destroys the dispatcher.
  std::function<void(std::function<void()> task)> post;
  // Where and when a request runs, for a transport with ordering rules of its own (the agent's
  // RequestScheduler: lanes by method and params). Unset: inline or on `post`, by the entry's
  // Execution. Set: called on the reading thread for every request (initialize excepted) with
  // its method, its params (valid for this call only) and the task that runs the handler and
  // replies; the hook runs the task now, later on any thread, or drops it (a dropped task
  // answers -32603 when destroyed, so the id is not left in flight).
  std::function<void(const std::string& method, const json& params, Execution execution,
                     std::function<void()> task)>
      schedule;
  // The `exit` notification arrived; the code is 0 after `shutdown`, else 1 (LSP).
  std::function<void(int exit_code)> on_exit;
  std::function<void(LogLevel, const std::string&)> log;
  // A response from the peer (to a request this side sent): true when it was taken. Unset or
  // false: logged and ignored.
  std::function<bool(const Response&)> on_response;
};

struct DispatcherOptions {
  Encoding encoding = Encoding::json;
  // LSP lifecycle: -32002 before initialize, -32600 after shutdown, `exit` ends the session.
  // Off for the agent wire, which has its own handshake.
  bool lsp_lifecycle = true;
};

enum class Lifecycle { uninitialized, running, shutting_down, exited };

class Dispatcher {
 public:
  Dispatcher(const BindingTable& table, DispatcherHooks hooks, DispatcherOptions options = {});
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // One framed body from the peer. Never throws; every problem becomes a reply or a log line.
  void handle_body(std::string_view body);
  // An already-decoded message or batch (moved into the handlers: a sync write's bytes are not
  // copied on the way).
  void handle_value(json value);

  // Sends a notification to the peer.
  void notify(const std::string& method, json params);

  // Cancels every in-flight request (shutdown of the transport, lost peer).
  void cancel_all();
  // Waits until no request is in flight, up to `timeout`; true when idle.
  bool wait_idle(std::chrono::steady_clock::duration timeout) const;

  Lifecycle lifecycle() const { return lifecycle_.load(); }
  bool shutdown_received() const { return shutdown_received_.load(); }
  std::size_t in_flight() const;

 private:
  using Deliver = std::function<void(json)>;
  // Handles one element; returns true when it will deliver a response.
  bool handle_one(json&& value, const Deliver& deliver);
  void handle_request(Request req, const Deliver& deliver);
  void handle_notification(Notification note);
  std::expected<json, ResponseError> run_request(const MethodEntry& entry, const json& params, CallContext& ctx);
  void run_notification(const MethodEntry& entry, const json& params);
  void log(LogLevel level, const std::string& message) const;

  const BindingTable& table_;
  DispatcherHooks hooks_;
  DispatcherOptions options_;
  std::atomic<Lifecycle> lifecycle_{Lifecycle::uninitialized};
  std::atomic<bool> shutdown_received_{false};
  mutable std::mutex pending_mutex_;
  mutable std::condition_variable idle_cv_;
  std::unordered_map<std::string, CancellationSource> pending_;  // id.dump() -> source
};

}  // namespace ferry::protocol

// Server -> client requests (host/confirmHostKey, host/passphrase): ids in their own space
// ("srv-N" strings, never confused with the client's), responses routed back by id, each call
// waiting with a deadline and failing at once when the transport ends or the caller is cancelled.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <expected>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "protocol/cancellation.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::protocol {

class OutgoingRequests {
 public:
  using Send = std::function<void(const json& message)>;

  OutgoingRequests() = default;
  OutgoingRequests(const OutgoingRequests&) = delete;
  OutgoingRequests& operator=(const OutgoingRequests&) = delete;

  // The transport connects its writer while it runs; calls without one fail at once.
  void attach(Send send);
  // Fails every waiting call ("the client went away") and refuses new ones until attach().
  void detach(const std::string& reason);

  // Sends `method` to the client and waits for its response, up to `timeout` or until `cancel`
  // fires. Error responses from the client come back as they were sent.
  std::expected<json, ResponseError> call(const std::string& method, json params, std::chrono::milliseconds timeout,
                                          const CancellationToken& cancel = {});

  // A notification to the client (host/stateChanged); false when no client is attached.
  bool notify(const std::string& method, json params);

  // A response from the client: true when it answered one of ours (false: not ours, ignore).
  bool route(const Response& response);

  std::size_t waiting() const;

 private:
  struct Slot {
    std::optional<std::expected<json, ResponseError>> outcome;
  };
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  Send send_;
  std::string detached_reason_ = "no client is attached";
  std::uint64_t next_id_ = 1;
  std::map<std::string, Slot*> slots_;
};

// True for ids this server hands out ("srv-N").
bool is_server_request_id(const RequestId& id);

}  // namespace ferry::protocol

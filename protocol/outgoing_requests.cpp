// Server -> client requests: see outgoing_requests.hpp.
#include "protocol/outgoing_requests.hpp"

namespace ferry::protocol {

namespace {
constexpr std::string_view kIdPrefix = "srv-";
// Cancellation has no callback, so a waiting call also wakes this often to look at it.
constexpr auto kCancelPoll = std::chrono::milliseconds(50);
}  // namespace

bool is_server_request_id(const RequestId& id) {
  return id.is_string() && id.get_ref<const std::string&>().starts_with(kIdPrefix);
}

void OutgoingRequests::attach(Send send) {
  std::lock_guard lock(mutex_);
  send_ = std::move(send);
}

void OutgoingRequests::detach(const std::string& reason) {
  std::lock_guard lock(mutex_);
  send_ = nullptr;
  detached_reason_ = reason;
  for (auto& [id, slot] : slots_)
    if (!slot->outcome)
      slot->outcome = std::unexpected(ResponseError{error_code::kRequestCancelled, reason, {}});
  cv_.notify_all();
}

std::expected<json, ResponseError> OutgoingRequests::call(const std::string& method, json params,
                                                          std::chrono::milliseconds timeout,
                                                          const CancellationToken& cancel) {
  Slot slot;
  std::string id;
  Send send;
  {
    std::lock_guard lock(mutex_);
    if (!send_)
      return std::unexpected(ResponseError{error_code::kRequestCancelled, method + ": " + detached_reason_, {}});
    id = std::string(kIdPrefix) + std::to_string(next_id_++);
    slots_.emplace(id, &slot);
    send = send_;
  }
  // Outside the lock: the writer may block on a slow client.
  send(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mutex_);
  while (!slot.outcome) {
    if (cancel.cancelled()) {
      slot.outcome = std::unexpected(ResponseError{error_code::kRequestCancelled, method + ": cancelled", {}});
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      slot.outcome = std::unexpected(ResponseError{
          error_code::kRequestCancelled,
          method + ": the client did not answer within " + std::to_string(timeout.count()) + " ms", {}});
      break;
    }
    cv_.wait_for(lock, std::min<std::chrono::steady_clock::duration>(deadline - now, kCancelPoll));
  }
  slots_.erase(id);
  return std::move(*slot.outcome);
}

bool OutgoingRequests::notify(const std::string& method, json params) {
  Send send;
  {
    std::lock_guard lock(mutex_);
    send = send_;
  }
  if (!send) return false;
  send(json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
  return true;
}

bool OutgoingRequests::route(const Response& response) {
  if (!is_server_request_id(response.id)) return false;
  std::lock_guard lock(mutex_);
  auto it = slots_.find(response.id.get<std::string>());
  if (it == slots_.end()) return true;  // ours, but late (timed out): dropped
  if (!it->second->outcome) {
    if (response.ok())
      it->second->outcome = std::get<json>(response.outcome);
    else
      it->second->outcome = std::unexpected(std::get<ResponseError>(response.outcome));
  }
  cv_.notify_all();
  return true;
}

std::size_t OutgoingRequests::waiting() const {
  std::lock_guard lock(mutex_);
  return slots_.size();
}

}  // namespace ferry::protocol

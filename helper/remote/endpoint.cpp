// The Endpoint's notification fan-out and its subscriptions (endpoint.hpp).
#include "helper/remote/endpoint.hpp"

namespace ferry::remote {

Error call_error(const ResponseError& e, std::string message) {
  Error out = error_of(e, std::move(message));
  if (e.code == protocol::error_code::kRequestCancelled) out.kind = ErrorKind::agent_lost;
  return out;
}

std::uint64_t NotificationFanout::add(NotificationHandler handler) {
  std::lock_guard lock(mutex_);
  const std::uint64_t id = next_id_++;
  handlers_.emplace(id, std::move(handler));
  return id;
}

void NotificationFanout::remove(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  handlers_.erase(id);
}

void NotificationFanout::deliver(const protocol::Notification& note) const {
  std::lock_guard lock(mutex_);
  for (const auto& [id, handler] : handlers_)
    if (handler) handler(note);
}

std::size_t NotificationFanout::size() const {
  std::lock_guard lock(mutex_);
  return handlers_.size();
}

Subscription& Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    reset();
    fanout_ = std::move(other.fanout_);
    id_ = other.id_;
    other.id_ = 0;
  }
  return *this;
}

void Subscription::reset() {
  if (id_ == 0) return;
  if (auto fanout = fanout_.lock()) fanout->remove(id_);
  id_ = 0;
  fanout_.reset();
}

}  // namespace ferry::remote

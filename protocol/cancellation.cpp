// Cancellation tokens: see cancellation.hpp.
#include "protocol/cancellation.hpp"

namespace ferry::protocol {

CancellationToken::CancellationToken() : state_(std::make_shared<State>()) {}

bool CancellationToken::cancelled() const {
  std::lock_guard lock(state_->mutex);
  return state_->cancelled;
}

bool CancellationToken::wait_for(std::chrono::steady_clock::duration timeout) const {
  std::unique_lock lock(state_->mutex);
  return state_->cv.wait_for(lock, timeout, [&] { return state_->cancelled; });
}

void CancellationSource::cancel() {
  {
    std::lock_guard lock(state_->mutex);
    state_->cancelled = true;
  }
  state_->cv.notify_all();
}

bool CancellationSource::cancelled() const {
  std::lock_guard lock(state_->mutex);
  return state_->cancelled;
}

}  // namespace ferry::protocol

// Server-made progress tokens and their cancellation: see server_progress.hpp.
#include "helper/server/server_progress.hpp"

#include <spdlog/spdlog.h>

namespace ferry::server {

namespace p = ferry::protocol;

// The create request waits for the client's answer (LSP: no $/progress on a token before it).
inline constexpr std::chrono::seconds kCreateTimeout{10};

ServerProgress::Work::~Work() {
  if (owner_ && !token_.empty()) {
    std::lock_guard lock(owner_->mutex_);
    owner_->live_.erase(token_);
  }
}

std::unique_ptr<ServerProgress::Work> ServerProgress::begin(const p::CallContext* call) {
  p::CancellationToken call_cancel = call ? call->cancellation() : p::CancellationToken{};
  if (call && call->has_work_done_token())
    return std::make_unique<Work>(nullptr, "", call->progress(), p::CancellationSource{}, call_cancel);
  auto notify = [this](const std::string& method, p::json params) { client_.notify(method, std::move(params)); };
  if (!questions_.traits().work_done_progress)
    return std::make_unique<Work>(nullptr, "", p::WorkDoneProgress(), p::CancellationSource{}, call_cancel);
  // Registered before the client hears of it: a cancel may come before the create's answer.
  std::string token;
  p::CancellationSource source;
  {
    std::lock_guard lock(mutex_);
    token = "ferry-" + std::to_string(next_++);
    live_.emplace(token, source);
  }
  auto created = client_.call("window/workDoneProgress/create", p::json{{"token", token}}, kCreateTimeout, call_cancel);
  if (!created) {
    spdlog::debug("no progress token: {}", created.error().message);
    std::lock_guard lock(mutex_);
    live_.erase(token);
    return std::make_unique<Work>(nullptr, "", p::WorkDoneProgress(), p::CancellationSource{}, call_cancel);
  }
  return std::make_unique<Work>(this, token, p::WorkDoneProgress(p::json(token), notify), source, call_cancel);
}

void ServerProgress::cancel(const std::string& token) {
  std::lock_guard lock(mutex_);
  if (auto it = live_.find(token); it != live_.end()) it->second.cancel();
}

}  // namespace ferry::server

// Work-done progress: see progress.hpp.
#include "protocol/progress.hpp"

#include <algorithm>

#include "protocol/messages.hpp"

namespace ferry::protocol {

WorkDoneProgress::WorkDoneProgress(nlohmann::json token, Notify notify)
    : token_(std::move(token)), notify_(std::move(notify)) {}

WorkDoneProgress::WorkDoneProgress(WorkDoneProgress&& other) noexcept
    : token_(std::move(other.token_)), notify_(std::move(other.notify_)), phase_(other.phase_) {
  other.phase_ = Phase::ended;
}

WorkDoneProgress::~WorkDoneProgress() {
  try {
    if (phase_ == Phase::begun) end();
  } catch (...) {
  }
}

void WorkDoneProgress::send(nlohmann::json value) {
  if (!enabled()) return;
  notify_(std::string(kProgressMethod), to_json(ProgressParams{token_, std::move(value)}));
}

void WorkDoneProgress::begin(const std::string& title, std::optional<std::string> message,
                             std::optional<int> percentage, bool cancellable) {
  if (phase_ != Phase::idle) return;
  phase_ = Phase::begun;
  if (percentage) percentage = std::clamp(*percentage, 0, 100);
  send(to_json(WorkDoneProgressBegin{title, std::move(message), percentage, cancellable}));
}

void WorkDoneProgress::report(std::optional<std::string> message, std::optional<int> percentage) {
  if (phase_ != Phase::begun) return;
  if (percentage) percentage = std::clamp(*percentage, 0, 100);
  send(to_json(WorkDoneProgressReport{std::move(message), percentage}));
}

void WorkDoneProgress::end(std::optional<std::string> message) {
  if (phase_ != Phase::begun) return;
  phase_ = Phase::ended;
  send(to_json(WorkDoneProgressEnd{std::move(message)}));
}

}  // namespace ferry::protocol

// Work-done progress, LSP style: the client puts a `workDoneToken` in a request's params and
// the server sends `$/progress` notifications {token, value:{kind:begin|report|end,...}}.
// Without a token every call is a no-op, so handlers report unconditionally.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ferry::protocol {

class WorkDoneProgress {
 public:
  using Notify = std::function<void(const std::string& method, nlohmann::json params)>;

  WorkDoneProgress() = default;  // disabled
  WorkDoneProgress(nlohmann::json token, Notify notify);
  WorkDoneProgress(WorkDoneProgress&& other) noexcept;
  WorkDoneProgress& operator=(WorkDoneProgress&&) = delete;
  WorkDoneProgress(const WorkDoneProgress&) = delete;
  ~WorkDoneProgress();  // sends `end` if begun and not ended, so the client's bar never hangs

  bool enabled() const { return !token_.is_null() && static_cast<bool>(notify_); }
  void begin(const std::string& title, std::optional<std::string> message = std::nullopt,
             std::optional<int> percentage = std::nullopt, bool cancellable = true);
  void report(std::optional<std::string> message, std::optional<int> percentage = std::nullopt);
  void end(std::optional<std::string> message = std::nullopt);

 private:
  enum class Phase { idle, begun, ended };
  void send(nlohmann::json value);
  nlohmann::json token_;
  Notify notify_;
  Phase phase_ = Phase::idle;
};

}  // namespace ferry::protocol

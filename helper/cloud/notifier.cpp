// Webhook notifications: see notifier.hpp.
#include "helper/cloud/notifier.hpp"

#include <cstdlib>

#include "protocol/box_signals.hpp"
#include "remote-runtime/train/webhook.hpp"

namespace ferry::cloud {

using json = nlohmann::json;

std::optional<std::string> webhook_url_from_env() {
  const char* name = std::getenv("FERRY_WEBHOOK_ENV");
  const char* value = std::getenv(name && *name ? name : "FERRY_WEBHOOK_URL");
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

json run_exit_notice(const json& exited, const std::string& project, const std::string& host) {
  std::optional<int> code, sig;
  if (exited.contains("exitCode") && exited["exitCode"].is_number_integer()) code = exited["exitCode"].get<int>();
  if (exited.contains("signal") && exited["signal"].is_number_integer()) sig = exited["signal"].get<int>();
  namespace box = protocol::box_signal;  // the run's signals are the box's (Linux) numbers
  auto interrupting = [](int s) { return s == box::kTerm || s == box::kInt || s == box::kHup || s == box::kKill; };
  std::string event = "run.failed";
  if (sig ? interrupting(*sig) : code && *code > 128 && interrupting(*code - 128)) event = "run.interrupted";
  else if (code && *code == 0) event = "run.completed";
  json n{{"event", event}, {"run", exited.value("id", std::string())}};
  if (code) n["exitCode"] = *code;
  if (sig) n["signal"] = *sig;
  if (!project.empty()) n["project"] = project;
  if (!host.empty()) n["host"] = host;
  return n;
}

std::optional<json> autostop_webhook_param() {
  auto url = webhook_url_from_env();
  if (!url) return std::nullopt;
  return json{{"url", *url}};
}

std::optional<std::expected<int, std::string>> send_notice(const json& notice) {
  auto url = webhook_url_from_env();
  if (!url) return std::nullopt;
  auto status = webhook::post_json(*url, notice.dump());
  if (!status) return std::unexpected(std::move(status).error());
  return *status;
}

}  // namespace ferry::cloud

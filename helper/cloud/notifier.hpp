// Notifications on run completion, failure and interruption (and autostop): a JSON body to the
// webhook whose URL is in $FERRY_WEBHOOK_URL (or the variable $FERRY_WEBHOOK_ENV names) — never in
// ferry.json, never in a log line (only webhook::redact_url's form is logged).
#pragma once

#include <expected>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ferry::cloud {

// The webhook URL from the environment, if one is set.
std::optional<std::string> webhook_url_from_env();

// run/exited's params -> {event: "run.completed" | "run.failed" | "run.interrupted", run, exitCode?,
// signal?, project?, host?}: interrupted = ended by SIGTERM/SIGINT/SIGHUP/SIGKILL (or 128+ those).
nlohmann::json run_exit_notice(const nlohmann::json& exited, const std::string& project, const std::string& host);

// autostop/set's `webhook` param ({url}) when a webhook is configured: the agent's watchdog posts
// the autostop notice from the box, holding the URL in memory only (never on the box's disk).
std::optional<nlohmann::json> autostop_webhook_param();

// Posts `notice` when a webhook is configured: nullopt when none is, else the HTTP status or why
// not (the URL redacted). Blocks up to 10 s.
std::optional<std::expected<int, std::string>> send_notice(const nlohmann::json& notice);

}  // namespace ferry::cloud

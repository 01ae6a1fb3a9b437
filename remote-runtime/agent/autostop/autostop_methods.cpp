// autostop/* on the agent: see autostop_methods.hpp.
#include "remote-runtime/agent/autostop/autostop_methods.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "protocol/jsonrpc.hpp"
#include "remote-runtime/agent/autostop/watchdog.hpp"
#include "remote-runtime/agent/raw_binding.hpp"
#include "remote-runtime/agent/run/run_store.hpp"
#include "remote-runtime/train/url_redaction.hpp"

namespace ferry::agent::autostop {

namespace p = ferry::protocol;

json status_json(const Paths& paths) {
  json j{{"armed", false}, {"watchdog", {{"running", watchdog_running(paths)}}}};
  if (auto s = read_settings(paths)) {
    j["armed"] = true;
    j["settings"] = to_json(*s);
  }
  if (auto st = run::read_json_file(paths.status())) j["watchdog"]["status"] = *st;
  if (auto e = last_event(paths)) j["lastEvent"] = *e;
  return j;
}

std::optional<p::Response> handle_autostop_method(const p::Request& request, const Paths& paths) {
  if (request.method == "autostop/set") {
    json params = request.params.is_null() ? json::object() : request.params;
    std::optional<Webhook> hook;
    if (params.is_object()) {
      if (auto w = params.find("webhook"); w != params.end()) {
        auto parsed = webhook_from_json(*w);
        if (!parsed) return p::make_error(request.id, p::error_code::kInvalidParams, "autostop/set: " + parsed.error());
        hook = *parsed;
      }
      // Only the agent sets these: the URL stays off the disk, its redacted form goes in.
      for (const char* key : {"webhook", "webhookTo", "watchdogId"}) params.erase(key);
    }
    auto s = settings_from_json(params);
    if (!s) return p::make_error(request.id, p::error_code::kInvalidParams, "autostop/set: " + s.error());
    const auto now = std::chrono::system_clock::now();
    s->armed_at = run::iso_utc_ms(now);
    if (hook) s->webhook_to = webhook::redact_url(hook->url);
    s->watchdog_id = fmt::format("{}-{}", ::getpid(), now.time_since_epoch().count());
    if (!write_settings(paths, *s))
      return p::make_error(request.id, p::error_code::kInternalError,
                           "autostop/set: cannot write " + paths.settings().string());
    record_event(paths, "armed", to_json(*s));
    if (!ensure_watchdog(paths, hook, /*take_over=*/true))
      return p::make_error(request.id, p::error_code::kInternalError, "autostop/set: cannot start the watchdog (pipe or fork failed)");
    return p::make_result(request.id, status_json(paths));
  }
  if (request.method == "autostop/cancel") {
    const bool was = remove_settings(paths);
    if (was) record_event(paths, "cancelled");
    json j = status_json(paths);
    j["wasArmed"] = was;
    return p::make_result(request.id, j);
  }
  if (request.method == "autostop/status") return p::make_result(request.id, status_json(paths));
  return std::nullopt;
}

void bind_autostop_methods(protocol::BindingTable& table, const Paths& paths) {
  bind_raw_family(table, {"autostop/set", "autostop/cancel", "autostop/status"},
                  [paths](const p::Request& r) { return handle_autostop_method(r, paths); });
}

}  // namespace ferry::agent::autostop

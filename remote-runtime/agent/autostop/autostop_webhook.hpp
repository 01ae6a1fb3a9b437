// The autostop notice's webhook, sent from the box when nobody is connected. The agent does not
// link libcurl (boxes may lack it), so the POST goes through the box's `curl` binary, with the URL
// and body on curl's stdin (`curl -K -`) and never in argv. The URL is a secret: it arrives in
// autostop/set's params, reaches the watchdog through a pipe, and lives only in the watchdog's
// memory — settings.json keeps just its redacted form, so a watchdog restarted later knows that
// a webhook was wanted and records that it could not be sent.
#pragma once

#include <expected>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ferry::agent::autostop {

struct Webhook {
  std::string url;
  std::string ca_file;  // PEM on the box; empty: $FERRY_WEBHOOK_CA_FILE of the watchdog, else the system store
};

// autostop/set's `webhook` param {url, caFile?}; the error names the field and never shows the URL.
std::expected<Webhook, std::string> webhook_from_json(const nlohmann::json& j);
nlohmann::json webhook_to_json(const Webhook& w);

// The notice's body: {event: "autostop.fired", host, idleSeconds, idleMinutes, action, armedAt?}.
nlohmann::json autostop_notice(double idle_seconds, const std::string& action, const std::string& armed_at);

// POSTs `body` through `curl` found on PATH (or `curl_path`): the event detail to record,
// {sent: true, via: "curl", status, to} or {sent: false, to, reason} — `to` and every message
// carry only the redacted URL. Gives up after 10 s.
nlohmann::json send_webhook(const Webhook& w, const nlohmann::json& body, const std::string& curl_path = "");

// Quoting for curl's config syntax (a "..." string: backslash and double quote escaped).
std::string curl_config_quote(const std::string& s);

}  // namespace ferry::agent::autostop

// See cloud_events.hpp.
#include "helper/server/cloud_events.hpp"

#include <cmath>

#include <fmt/format.h>

namespace ferry::server {

using json = protocol::json;

namespace {

std::string minutes(double seconds) {
  if (seconds < 120) return fmt::format("{:g} s", std::round(seconds));
  return fmt::format("{:g} min", std::round(seconds / 60));
}

std::string joined(const json& ids) {
  std::string out;
  if (!ids.is_array()) return out;
  for (const auto& id : ids)
    if (id.is_string()) out += (out.empty() ? "" : ", ") + id.get<std::string>();
  return out;
}

std::optional<CloudEventMessage> spot_message(const json& e, const std::string& host) {
  if (e.value("event", "") != "interrupted") return std::nullopt;
  const std::string runs = joined(e.value("runs", json::array()));
  std::string text = fmt::format("Spot interruption notice on {} ({}): ", host, e.value("source", "notice"));
  if (runs.empty()) {
    text += "no ferry-train run was live. The box will be reclaimed: pull what you need now (ferry pull).";
  } else {
    const std::string first = e["runs"][0].get<std::string>();
    text += "SIGTERM sent to ferry-train run" + std::string(e["runs"].size() > 1 ? "s " : " ") + runs +
            "; each writes a checkpoint and stops. Continue on another box with `ferry resume " + first + " --host NEWBOX`.";
  }
  return CloudEventMessage{MessageType::warning, std::move(text)};
}

std::optional<CloudEventMessage> autostop_message(const json& e, const std::string& host) {
  const std::string kind = e.value("event", "");
  const std::string action = e.value("action", "stop");
  if (kind == "armed")
    return CloudEventMessage{MessageType::info, fmt::format("Autostop armed on {}: {} after {} idle (no live run, no connected helper, "
                                                            "GPUs under {:g} %).",
                                                            host, action, minutes(e.value("idleSeconds", 0.0)), e.value("gpuUtilBelow", 5.0))};
  if (kind == "cancelled") return CloudEventMessage{MessageType::info, "Autostop cancelled on " + host + "."};
  if (kind == "idle")
    return CloudEventMessage{MessageType::warning, fmt::format("{} has been idle for {}: autostop acts now ({}).", host,
                                                               minutes(e.value("idleSeconds", 0.0)), action)};
  if (kind == "fired") return CloudEventMessage{MessageType::warning, "Autostop fired on " + host + ": " + action + "."};
  if (kind == "aborted")
    return CloudEventMessage{MessageType::info, "Autostop on " + host + " held back: the box became busy (" + e.value("busy", json()).dump() + ")."};
  return std::nullopt;
}

}  // namespace

std::optional<CloudEventMessage> cloud_event_message(const json& params, const std::string& host) {
  if (!params.is_object() || !params.contains("event") || !params["event"].is_object()) return std::nullopt;
  const std::string source = params.value("source", "");
  if (source == "spot") return spot_message(params["event"], host);
  if (source == "autostop") return autostop_message(params["event"], host);
  return std::nullopt;
}

void announce_cloud_event(ClientQuestions& client, const std::filesystem::path& project_root, const std::string& host,
                          const json& params) {
  auto message = cloud_event_message(params, host);
  if (client.traits().ferry) {
    json p = params;
    p["project"] = project_root.string();
    p["host"] = host;
    if (message) p["message"] = message->text;
    client.client().notify("cloud/event", std::move(p));
  }
  if (message) client.show(message->type, message->text);
}

}  // namespace ferry::server

// The agent's `cloud/event` notifications (a spot notice, autostop armed/idle/fired/...: see
// remote-runtime/agent/autostop/cloud_events.hpp) told to the person at the editor: a ferry
// client gets `cloud/event` with the project and host added; every client gets a
// window/showMessage for the events a person should see (a spot notice, autostop armed, about
// to act, fired, held back, cancelled), since plain LSP clients show nothing else.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "helper/server/client_questions.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::server {

struct CloudEventMessage {
  MessageType type = MessageType::info;
  std::string text;
};

// The message for `params` ({source, event}) from `host`; nullopt for bookkeeping events
// (spot watching, autostop preStop/actionDone) and for anything not understood.
std::optional<CloudEventMessage> cloud_event_message(const protocol::json& params, const std::string& host);

// Sends both forms to the client as described at the top.
void announce_cloud_event(ClientQuestions& client, const std::filesystem::path& project_root, const std::string& host,
                          const protocol::json& params);

}  // namespace ferry::server

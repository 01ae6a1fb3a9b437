// Typed results of the host methods whose params live in messages.hpp: host/disconnect, and
// ferry/testConfirmHostKey (the transcripts' way to ask host/confirmHostKey).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/json_reader.hpp"

namespace ferry::protocol {

using json = nlohmann::json;

namespace method {
inline constexpr std::string_view kHostDisconnect = "host/disconnect";
}  // namespace method

struct HostDisconnectResult {
  std::string host;
  bool disconnected = false;  // false: there was no link
};
json to_json(const HostDisconnectResult& r);
std::optional<DecodeError> from_json(const json& j, HostDisconnectResult& out, const std::string& ptr = "");

// ferry/testConfirmHostKey answers with the client's decision (the type is messages.hpp's).
struct ConfirmHostKeyResult;
json to_json(const ConfirmHostKeyResult& r);

}  // namespace ferry::protocol

// Typed results of the IDE's env/* methods (env/info, env/sync). Their params are read in
// helper/server/env_methods.cpp with ObjectReader, beside the mirror's defaults they need.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/json_reader.hpp"

namespace ferry::protocol {

using json = nlohmann::json;

namespace method {
inline constexpr std::string_view kEnvInfo = "env/info";
inline constexpr std::string_view kEnvSync = "env/sync";
}  // namespace method

// The box interpreter's facts: helper/env's EnvInfo document (env::to_json), which `ferry env
// --json` prints and each mirror's mirror.json keeps; helper/env owns that shape, so it is json
// here.
struct EnvInfoResult {
  json info = json::object();
};
json to_json(const EnvInfoResult& r);

// One mirror pass: helper/env's EnvSyncReport document (also `ferry env sync --json`'s, json for
// the same reason), plus the project venv made over it.
struct EnvSyncResult {
  json report = json::object();
  std::optional<std::string> venv_python;  // null when no venv was made
  std::optional<std::string> venv_error;   // absent unless making it failed
};
json to_json(const EnvSyncResult& r);
std::optional<DecodeError> from_json(const json& j, EnvSyncResult& out, const std::string& ptr = "");

}  // namespace ferry::protocol

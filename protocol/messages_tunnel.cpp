// Typed tunnel/* and debug/prepare messages: see messages_tunnel.hpp.
#include "protocol/messages_tunnel.hpp"

namespace ferry::protocol {

std::optional<DecodeError> from_json(const json& j, TunnelOpenParams& out, const std::string&) {
  if (!j.is_object()) return DecodeError{"", "expected an object"};
  out.raw = j;
  return std::nullopt;
}

std::optional<DecodeError> from_json(const json& j, TunnelCloseParams& out, const std::string&) {
  if (!j.is_object() || !j.contains("id") || !j["id"].is_number_integer())
    return DecodeError{"/id", "expected the tunnel's id (an integer, from tunnel/open or tunnel/list)"};
  out.id = j["id"].get<int>();
  return std::nullopt;
}

std::optional<DecodeError> from_json(const json& j, TunnelListParams&, const std::string&) {
  if (!j.is_null() && !j.is_object()) return DecodeError{"", "expected an object"};
  return std::nullopt;
}

json to_json(const TunnelInfo& t) {
  json j{{"id", t.id},
         {"kind", t.local ? "local" : "reverse"},
         {"bindAddress", t.bind_address},
         {"localPort", t.local_port},
         {"remotePort", t.remote_port},
         {"state", t.state},
         {"accepted", t.accepted},
         {"live", t.live},
         {"description", t.description}};
  if (!t.name.empty()) j["name"] = t.name;
  if (t.local) j["remoteHost"] = t.remote_host;
  else j["localHost"] = t.local_host;
  if (!t.error.empty()) j["error"] = t.error;
  return j;
}

json to_json(const TunnelCloseResult& r) { return {{"closed", r.closed}}; }

json to_json(const TunnelListResult& r) {
  json list = json::array();
  for (const auto& t : r.tunnels) list.push_back(to_json(t));
  return {{"tunnels", std::move(list)}};
}

std::optional<DecodeError> from_json(const json& j, DebugPrepareParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.required("command", out.command);
  r.optional("port", out.port);
  r.optional("localPort", out.local_port);
  r.optional("env", out.env);
  r.optional("cwd", out.cwd);
  r.optional("legacyType", out.legacy_type);
  r.optional("justMyCode", out.just_my_code);
  r.optional("wait", out.wait);
  r.check(!out.command.empty(), "command", "expected the script (or -m MODULE) and its arguments");
  r.check(out.port >= 1 && out.port <= 65535, "port", "expected a TCP port (1-65535)");
  r.check(!out.local_port || (*out.local_port >= 0 && *out.local_port <= 65535), "localPort",
          "expected a TCP port (0-65535; 0 picks a free one)");
  r.check(out.wait >= 1 && out.wait <= 3600, "wait", "expected seconds between 1 and 3600");
  return r.error();
}

json to_json(const DebugPrepareResult& r) {
  return {{"configuration", r.configuration}, {"runId", r.run_id}, {"localPort", r.local_port}};
}

}  // namespace ferry::protocol

// The agent's own methods' params and results: see messages_agent.hpp.
#include "protocol/messages_agent.hpp"

namespace ferry::protocol {

std::optional<DecodeError> from_json(const json& j, AgentHelloParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("protocolVersion", out.protocol_version);
  // Informational only: a helper that sends something else still gets its version checked.
  if (auto it = j.is_object() ? j.find("helperVersion") : j.end(); j.is_object() && it != j.end() && it->is_string())
    out.helper_version = it->get<std::string>();
  return r.error();
}

json to_json(const AgentHelloResult& r) {
  return json{{"protocolVersion", r.protocol_version}, {"version", r.version}, {"pid", r.pid}, {"root", r.root},
              {"os", r.os}, {"arch", r.arch}, {"hostname", r.hostname}};
}

std::optional<DecodeError> from_json(const json& j, AgentPingParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("echo", out.echo);
  r.optional("delayMs", out.delay_ms);
  r.check(out.delay_ms >= 0 && out.delay_ms <= kMaxAgentPingDelayMs, "delayMs",
          "delayMs must be an integer from 0 to " + std::to_string(kMaxAgentPingDelayMs));
  return r.error();
}

json to_json(const AgentPingResult& r) {
  json j{{"pong", true}};
  if (r.echo) j["echo"] = *r.echo;
  return j;
}

std::optional<DecodeError> from_json(const json& j, FsStatParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("path", out.path);
  return r.error();
}

json to_json(const FsStatResult& r) {
  json j{{"exists", r.exists}, {"path", r.path}};
  if (!r.exists) return j;
  j["type"] = r.type;
  j["size"] = r.size;
  j["mtimeNs"] = r.mtime_ns;
  j["mode"] = r.mode;
  return j;
}

}  // namespace ferry::protocol

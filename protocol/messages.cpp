// Typed IDE-wire messages: see messages.hpp.
#include "protocol/messages.hpp"

namespace ferry::protocol {
namespace {

bool is_progress_token(const json& t) { return t.is_string() || t.is_number_integer(); }

}  // namespace

std::optional<DecodeError> from_json(const json& j, EmptyParams&, const std::string& ptr) {
  return ObjectReader(j, ptr).error();
}

json to_json(const NullResult&) { return nullptr; }
json to_json(const EmptyResult&) { return json::object(); }

std::optional<DecodeError> from_json(const json& j, ClientInfo& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("name", out.name).optional("version", out.version);
  return r.error();
}

std::optional<DecodeError> from_json(const json& j, InitializeParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("processId", out.process_id)
      .optional("clientInfo", out.client_info)
      .optional("rootUri", out.root_uri)
      .optional("rootPath", out.root_path)
      .optional("trace", out.trace)
      .optional("initializationOptions", out.initialization_options)
      .optional("capabilities", out.capabilities)
      .optional("workspaceFolders", out.workspace_folders);
  r.check(out.capabilities.is_object(), "capabilities", "expected an object");
  r.check(out.workspace_folders.is_null() || out.workspace_folders.is_array(), "workspaceFolders",
          "expected an array of {uri, name} or null");
  r.check(!out.trace || *out.trace == "off" || *out.trace == "messages" || *out.trace == "verbose", "trace",
          "expected \"off\", \"messages\" or \"verbose\"");
  return r.error();
}

json to_json(const ServerInfo& s) { return {{"name", s.name}, {"version", s.version}}; }

json to_json(const InitializeResult& r) {
  json caps = r.capabilities.is_object() ? r.capabilities : json::object();
  // ferry's own surface lives where LSP keeps what it does not define.
  caps["experimental"] = {{"ferry", {{"protocol", 1}}}, {"methods", r.methods}, {"workDoneProgress", true},
                          {"cancelRequest", true}};
  return {{"serverInfo", to_json(r.server_info)}, {"capabilities", std::move(caps)}};
}

std::optional<DecodeError> from_json(const json& j, SetTraceParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("value", out.value);
  r.check(out.value == "off" || out.value == "messages" || out.value == "verbose", "value",
          "expected \"off\", \"messages\" or \"verbose\"");
  return r.error();
}

std::optional<DecodeError> from_json(const json& j, CancelParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("id", out.id);
  r.check(out.id.is_string() || out.id.is_number_integer(), "id", "expected a string or an integer");
  return r.error();
}

json to_json(const CancelParams& p) { return {{"id", p.id}}; }

json to_json(const ProgressParams& p) { return {{"token", p.token}, {"value", p.value}}; }

std::optional<DecodeError> from_json(const json& j, ProgressParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("token", out.token).required("value", out.value);
  r.check(is_progress_token(out.token), "token", "expected a string or an integer");
  return r.error();
}

json to_json(const WorkDoneProgressBegin& b) {
  json j{{"kind", "begin"}, {"title", b.title}, {"cancellable", b.cancellable}};
  if (b.message) j["message"] = *b.message;
  if (b.percentage) j["percentage"] = *b.percentage;
  return j;
}

json to_json(const WorkDoneProgressReport& r) {
  json j{{"kind", "report"}};
  if (r.message) j["message"] = *r.message;
  if (r.percentage) j["percentage"] = *r.percentage;
  return j;
}

json to_json(const WorkDoneProgressEnd& e) {
  json j{{"kind", "end"}};
  if (e.message) j["message"] = *e.message;
  return j;
}

std::optional<DecodeError> read_work_done_token(const json& params, json& token) {
  token = nullptr;
  if (!params.is_object()) return std::nullopt;
  auto it = params.find("workDoneToken");
  if (it == params.end() || it->is_null()) return std::nullopt;
  if (!is_progress_token(*it)) return DecodeError{"/workDoneToken", "expected a string or an integer"};
  token = *it;
  return std::nullopt;
}

std::optional<DecodeError> from_json(const json& j, ProjectLoadParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.check(!out.path || !out.path->empty(), "path", "expected a non-empty string");
  return r.error();
}

json to_json(const ProjectLoadParams& p) {
  json j = json::object();
  if (p.path) j["path"] = *p.path;
  return j;
}

std::optional<DecodeError> from_json(const json& j, HostConnectParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.check(!out.path || !out.path->empty(), "path", "expected a non-empty string");
  return r.error();
}

json to_json(const HostConnectResult& r) {
  return {{"host", r.host},
          {"agentVersion", r.agent_version},
          {"protocolVersion", r.protocol_version},
          {"remoteRoot", r.remote_root},
          {"os", r.os},
          {"arch", r.arch}};
}

std::optional<DecodeError> from_json(const json& j, DoctorRunParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.optional("host", out.host);
  r.check(!out.path || !out.path->empty(), "path", "expected a non-empty string");
  r.check(!out.host || !out.host->empty(), "host", "expected a non-empty string");
  return r.error();
}

json to_json(const DoctorRunResult& r) {
  json checks = json::array();
  for (const auto& c : r.checks)
    checks.push_back({{"check", c.check}, {"status", c.status}, {"detail", c.detail}, {"fix", c.fix}});
  return {{"host", r.host}, {"checks", std::move(checks)}};
}

json to_json(const ConfirmHostKeyParams& p) {
  return {{"host", p.host}, {"keyType", p.key_type}, {"fingerprint", p.fingerprint}};
}

std::optional<DecodeError> from_json(const json& j, ConfirmHostKeyParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("host", out.host);
  r.required("keyType", out.key_type);
  r.required("fingerprint", out.fingerprint);
  return r.error();
}

std::optional<DecodeError> from_json(const json& j, ConfirmHostKeyResult& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("accept", out.accept);
  return r.error();
}

json to_json(const PassphraseParams& p) { return {{"keyFile", p.key_file}}; }

std::optional<DecodeError> from_json(const json& j, PassphraseResult& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("passphrase", out.passphrase);
  return r.error();
}

std::optional<DecodeError> from_json(const json& j, PingParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("payload", out.payload);
  return r.error();
}

json to_json(const PingResult& r) {
  json j = json::object();
  if (!r.payload.is_null()) j["payload"] = r.payload;
  return j;
}

std::optional<DecodeError> from_json(const json& j, TestSleepParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("ms", out.ms).optional("steps", out.steps);
  r.check(out.ms >= 0 && out.ms <= kMaxTestSleepMs, "ms", "expected 0 to " + std::to_string(kMaxTestSleepMs));
  r.check(out.steps >= 1 && out.steps <= 100, "steps", "expected 1 to 100");
  return r.error();
}

json to_json(const TestSleepResult& r) { return {{"sleptMs", r.slept_ms}}; }

}  // namespace ferry::protocol

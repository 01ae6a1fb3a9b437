// Typed env/* messages: see messages_env.hpp.
#include "protocol/messages_env.hpp"

namespace ferry::protocol {

json to_json(const EnvInfoResult& r) { return r.info; }

json to_json(const EnvSyncResult& r) {
  json j = r.report.is_object() ? r.report : json::object();
  j["venvPython"] = r.venv_python ? json(*r.venv_python) : json(nullptr);
  if (r.venv_error) j["venvError"] = *r.venv_error;
  return j;
}

std::optional<DecodeError> from_json(const json& j, EnvSyncResult& out, const std::string& ptr) {
  if (!j.is_object()) return DecodeError{ptr, "expected an object"};
  out = {};
  ObjectReader r(j, ptr);
  r.optional("venvPython", out.venv_python);
  r.optional("venvError", out.venv_error);
  if (r.error()) return r.error();
  out.report = j;
  out.report.erase("venvPython");
  out.report.erase("venvError");
  return std::nullopt;
}

}  // namespace ferry::protocol

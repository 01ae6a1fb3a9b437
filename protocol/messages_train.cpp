// Typed train/* messages: see messages_train.hpp.
#include "protocol/messages_train.hpp"

namespace ferry::protocol {

std::optional<DecodeError> from_json(const json& j, TrainStartParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.required("config", out.config);
  r.optional("resume", out.resume);
  r.optional("sync", out.sync);
  r.optional("trainer", out.trainer);
  r.check(!out.config.empty(), "config", "expected the config file's path");
  return r.error();
}

std::optional<DecodeError> from_json(const json& j, TrainStopParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("runId", out.run_id);
  r.optional("signal", out.signal);
  r.check(out.signal == "INT" || out.signal == "TERM" || out.signal == "KILL", "signal",
          "expected \"INT\", \"TERM\" or \"KILL\"");
  return r.error();
}

json to_json(const TrainStartResult& r) {
  json j{{"runId", r.run_id}, {"argv", r.argv}, {"cwd", r.cwd}, {"host", r.host}};
  if (r.sync) j["sync"] = to_json(*r.sync);
  return j;
}

json to_json(const TrainMetricsParams& p) { return {{"runId", p.run_id}, {"event", p.event}}; }

json to_json(const TrainExitedParams& p) {
  json j{{"runId", p.run_id}};
  if (p.error) j["error"] = *p.error;
  if (p.exit_code) j["exitCode"] = *p.exit_code;
  if (p.signal) j["signal"] = *p.signal;
  if (p.status) j["status"] = *p.status;
  if (p.outputs) j["outputs"] = *p.outputs;
  if (!p.notes.empty()) j["notes"] = p.notes;
  return j;
}

}  // namespace ferry::protocol

// Typed run/* messages: see messages_run.hpp.
#include "protocol/messages_run.hpp"

namespace ferry::protocol {

std::string_view to_string(RunState s) {
  switch (s) {
    case RunState::running: return "running";
    case RunState::exited: return "exited";
    case RunState::lost: return "lost";
    case RunState::unknown: break;
  }
  return "unknown";
}

RunState run_state_from_string(std::string_view s) {
  if (s == "running") return RunState::running;
  if (s == "exited") return RunState::exited;
  if (s == "lost") return RunState::lost;
  return RunState::unknown;
}

std::optional<DecodeError> from_json(const json& j, RunStartParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.required("argv", out.argv);
  r.optional("cwd", out.cwd);
  r.optional("env", out.env);
  r.optional("tty", out.tty);
  r.optional("cols", out.cols);
  r.optional("rows", out.rows);
  r.check(!out.argv.empty(), "argv", "expected at least one word");
  return r.error();
}

std::optional<DecodeError> from_json(const json& j, RunIdParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("id", out.id);
  std::int64_t offset = 0;
  r.optional("offset", offset);
  r.check(offset >= 0, "offset", "expected a byte offset (0 or more)");
  out.offset = static_cast<std::uint64_t>(offset);
  if (j.is_object() && j.contains("signal")) {
    const json& s = j["signal"];
    if (s.is_number_integer()) out.signal = std::to_string(s.get<int>());
    else r.optional("signal", out.signal);
  }
  r.optional("text", out.text);
  r.optional("base64", out.base64);
  r.optional("eof", out.eof);
  r.optional("path", out.path);
  r.optional("cols", out.cols);
  r.optional("rows", out.rows);
  return r.error();
}

std::optional<DecodeError> from_json(const json& j, RunListParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.optional("all", out.all);
  return r.error();
}

json to_json(const RunStartResult& r) {
  return {{"id", r.id}, {"pid", r.pid}, {"startedAt", r.started_at}, {"argv", r.argv}, {"cwd", r.cwd}};
}

json to_json(const RunAttachResult& r) {
  return {{"id", r.id}, {"offset", r.offset}, {"state", r.state}};
}

json to_json(const RunListResult& r) {
  json arr = json::array();
  for (const auto& e : r.runs) {
    json j{{"id", e.id},       {"argv", e.argv}, {"cwd", e.cwd},
           {"root", e.root},   {"state", e.state}, {"pid", e.pid},
           {"startedAt", e.started_at}, {"logBytes", e.log_bytes}};
    if (!e.ended_at.empty()) j["endedAt"] = e.ended_at;
    if (e.exit_code) j["exitCode"] = *e.exit_code;
    if (e.signal) j["signal"] = *e.signal;
    if (!e.slurm_job.empty()) j["slurmJob"] = e.slurm_job;
    if (e.slurm_state) j["slurmState"] = to_json(*e.slurm_state);
    if (e.followed) j["followed"] = *e.followed;
    arr.push_back(std::move(j));
  }
  return {{"runs", std::move(arr)}};
}

json to_json(const RunExitedParams& p) {
  json j{{"id", p.id}, {"status", p.status}};
  if (p.ended_at) j["endedAt"] = *p.ended_at;
  if (p.log_bytes) j["logBytes"] = *p.log_bytes;
  if (p.exit_code) j["exitCode"] = *p.exit_code;
  if (p.signal) j["signal"] = *p.signal;
  if (p.error) j["error"] = *p.error;
  return j;
}

}  // namespace ferry::protocol

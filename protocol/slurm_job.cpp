// A run as a Slurm job, as pure functions: see slurm_job.hpp.
#include "protocol/slurm_job.hpp"

#include <charconv>

namespace ferry::protocol {

using json = nlohmann::json;

namespace {

std::expected<std::string, std::string> text_field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::string();
  if (!it->is_string()) return std::unexpected(std::string("slurm.") + key + " must be a string");
  const std::string v = it->get<std::string>();
  if (v.find_first_of(std::string("\n\r\0", 3)) != std::string::npos)
    return std::unexpected(std::string("slurm.") + key + " must be one line");
  return v;
}

std::expected<int, std::string> count_field(const json& j, const char* key, int least, int fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number_integer() || it->get<long long>() < least || it->get<long long>() > 100000)
    return std::unexpected(std::string("slurm.") + key + " must be an integer from " + std::to_string(least) + " to 100000");
  return it->get<int>();
}

}  // namespace

json to_json(const SlurmJobOptions& o) {
  json j{{"nodes", o.nodes}};
  for (auto [key, value] : {std::pair{"partition", &o.partition}, std::pair{"account", &o.account}, std::pair{"qos", &o.qos},
                            std::pair{"time", &o.time}, std::pair{"constraint", &o.constraint}})
    if (!value->empty()) j[key] = *value;
  if (o.gpus_per_node) j["gpusPerNode"] = o.gpus_per_node;
  if (o.cpus_per_task) j["cpusPerTask"] = o.cpus_per_task;
  if (!o.sbatch_options.empty()) j["sbatchOptions"] = o.sbatch_options;
  return j;
}

std::expected<SlurmJobOptions, std::string> slurm_options_from_json(const json& j) {
  if (!j.is_object()) return std::unexpected("slurm must be an object");
  SlurmJobOptions o;
  for (auto [key, out] : {std::pair{"partition", &o.partition}, std::pair{"account", &o.account}, std::pair{"qos", &o.qos},
                          std::pair{"time", &o.time}, std::pair{"constraint", &o.constraint}}) {
    auto v = text_field(j, key);
    if (!v) return std::unexpected(v.error());
    *out = *v;
  }
  for (auto [key, out, least, fallback] : {std::tuple{"nodes", &o.nodes, 1, 1}, std::tuple{"gpusPerNode", &o.gpus_per_node, 0, 0},
                                           std::tuple{"cpusPerTask", &o.cpus_per_task, 0, 0}}) {
    auto v = count_field(j, key, least, fallback);
    if (!v) return std::unexpected(v.error());
    *out = *v;
  }
  if (auto it = j.find("sbatchOptions"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return std::unexpected("slurm.sbatchOptions must be an array of strings");
    for (const auto& a : *it) {
      if (!a.is_string() || !a.get<std::string>().starts_with("-") || a.get<std::string>().find('\0') != std::string::npos)
        return std::unexpected("slurm.sbatchOptions: each is one sbatch option, starting with '-' (\"--mem=32G\")");
      o.sbatch_options.push_back(a.get<std::string>());
    }
  }
  for (const auto& [key, value] : j.items())
    if (key != "partition" && key != "account" && key != "qos" && key != "time" && key != "constraint" && key != "nodes" &&
        key != "gpusPerNode" && key != "cpusPerTask" && key != "sbatchOptions")
      return std::unexpected("slurm." + key + " is not a setting (partition, account, qos, time, constraint, nodes, "
                             "gpusPerNode, cpusPerTask, sbatchOptions)");
  return o;
}

std::vector<std::string> sbatch_arguments(const SlurmJobOptions& o, const std::string& job_name, const std::string& stdout_file,
                                          const std::string& stderr_file, const std::string& cwd) {
  std::vector<std::string> a{"--parsable", "--job-name=" + job_name, "--output=" + stdout_file, "--error=" + stderr_file,
                             "--chdir=" + cwd, "--export=ALL", "--nodes=" + std::to_string(o.nodes)};
  if (o.nodes > 1) a.push_back("--ntasks-per-node=1");
  for (auto [flag, value] : {std::pair{"--partition=", &o.partition}, std::pair{"--account=", &o.account},
                             std::pair{"--qos=", &o.qos}, std::pair{"--time=", &o.time}, std::pair{"--constraint=", &o.constraint}})
    if (!value->empty()) a.push_back(flag + *value);
  if (o.gpus_per_node) a.push_back("--gpus-per-node=" + std::to_string(o.gpus_per_node));
  if (o.cpus_per_task) a.push_back("--cpus-per-task=" + std::to_string(o.cpus_per_task));
  a.insert(a.end(), o.sbatch_options.begin(), o.sbatch_options.end());
  return a;
}

std::string batch_script(const std::string& agent, const std::vector<std::string>& argv, const SlurmJobOptions& o,
                         const std::string& exit_file) {
  std::vector<std::string> step = argv;
  // More than one node: srun starts the program once on each (the batch script runs on the first).
  if (o.nodes > 1) step.insert(step.begin(), {"srun", "--kill-on-bad-exit=1", "--"});
  return "#!" + agent + " --slurm-step\n" + json{{"argv", step}, {"exitFile", exit_file}}.dump() + "\n";
}

std::expected<SlurmStep, std::string> slurm_step_of(std::string_view script) {
  const auto eol = script.find('\n');
  if (!script.starts_with("#!") || eol == std::string_view::npos) return std::unexpected("not a ferry batch script");
  const json j = json::parse(script.substr(eol + 1), nullptr, false);
  if (!j.is_object() || !j.contains("argv") || !j["argv"].is_array() || j["argv"].empty())
    return std::unexpected("the batch script holds no argv");
  SlurmStep step;
  for (const auto& a : j["argv"]) {
    if (!a.is_string()) return std::unexpected("the batch script's argv holds a non-string");
    step.argv.push_back(a.get<std::string>());
  }
  if (j.contains("exitFile") && j["exitFile"].is_string()) step.exit_file = j["exitFile"].get<std::string>();
  return step;
}

std::map<std::string, std::string> parse_scontrol_line(std::string_view line) {
  std::map<std::string, std::string> out;
  std::size_t at = 0;
  while (at < line.size()) {
    while (at < line.size() && (line[at] == ' ' || line[at] == '\n')) ++at;
    const std::size_t eq = line.find('=', at);
    if (eq == std::string_view::npos) break;
    // A value runs to the next " Key=": values such as Reason=(null) or Command=... have no spaces
    // in the fields ferry reads.
    std::size_t end = line.find_first_of(" \n", eq + 1);
    if (end == std::string_view::npos) end = line.size();
    out[std::string(line.substr(at, eq - at))] = std::string(line.substr(eq + 1, end - eq - 1));
    at = end;
  }
  return out;
}

int slurm_exit_status(std::string_view state, std::string_view exit_code) {
  int code = 0, sig = 0;
  const auto colon = exit_code.find(':');
  std::from_chars(exit_code.data(), exit_code.data() + (colon == std::string_view::npos ? exit_code.size() : colon), code);
  if (colon != std::string_view::npos) std::from_chars(exit_code.data() + colon + 1, exit_code.data() + exit_code.size(), sig);
  if (sig > 0) return 128 + sig;
  if (code != 0) return code;
  return state == "COMPLETED" ? 0 : 1;
}

bool slurm_state_is_final(std::string_view state) {
  for (std::string_view s : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY",
                             "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"})
    if (state.starts_with(s)) return true;
  return false;
}

std::string pending_words(const std::string& reason, int ahead) {
  std::string words = "pending (" + reason + ")";
  if (ahead >= 0) words += ", " + std::to_string(ahead) + (ahead == 1 ? " job ahead" : " jobs ahead");
  return words;
}

std::string slurm_pending_line(const std::string& job_id, const std::string& reason, int ahead) {
  return "job " + job_id + " " + pending_words(reason, ahead);
}

std::vector<std::string> pending_queue_arguments(const std::string& partition) {
  std::vector<std::string> a{"squeue", "-h", "-t", "PENDING", "--sort=-p,i", "-o", "%i"};
  if (!partition.empty()) a.insert(a.end(), {"-p", partition});
  return a;
}

std::optional<int> jobs_ahead(std::string_view ids, std::string_view job_id) {
  int index = 0;
  while (!ids.empty()) {
    const auto eol = ids.find('\n');
    std::string_view line = ids.substr(0, eol);
    ids = eol == std::string_view::npos ? std::string_view{} : ids.substr(eol + 1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.empty()) continue;
    if (line == job_id) return index;
    ++index;
  }
  return std::nullopt;
}

std::string slurm_running_line(const std::string& job_id, const std::string& nodes) { return "job " + job_id + " running on " + nodes; }

std::optional<SlurmWaitLine> parse_slurm_wait_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (!line.starts_with("ferry: job ")) return std::nullopt;
  line.remove_prefix(11);
  const auto space = line.find(' ');
  if (space == 0 || space == std::string_view::npos) return std::nullopt;
  SlurmWaitLine w;
  w.job_id = std::string(line.substr(0, space));
  for (char c : w.job_id)
    if (c < '0' || c > '9') return std::nullopt;
  const std::string_view rest = line.substr(space + 1);
  if (rest.starts_with("pending (") && rest.find(')') != std::string_view::npos) {
    const auto close = rest.rfind(')');
    w.detail = std::string(rest.substr(9, close - 9));
    std::string_view tail = rest.substr(close + 1);
    if (tail.starts_with(", ")) {
      int n = -1;
      auto [p, ec] = std::from_chars(tail.data() + 2, tail.data() + tail.size(), n);
      const std::string_view words(p, static_cast<std::size_t>(tail.data() + tail.size() - p));
      if (ec != std::errc() || (words != " job ahead" && words != " jobs ahead")) return std::nullopt;
      w.ahead = n;
    } else if (!tail.empty()) {
      return std::nullopt;
    }
  } else if (rest.starts_with("running on ") && rest.size() > 11) {
    w.running = true;
    w.detail = std::string(rest.substr(11));
  } else {
    return std::nullopt;
  }
  return w;
}

json to_json(const SlurmJobState& s) {
  json j{{"state", s.state}};
  if (!s.reason.empty()) j["reason"] = s.reason;
  if (!s.nodes.empty()) j["nodes"] = s.nodes;
  if (!s.time_left.empty()) j["timeLeft"] = s.time_left;
  if (s.ahead >= 0) j["ahead"] = s.ahead;
  return j;
}

std::optional<SlurmJobState> slurm_job_state_from_json(const json& j) {
  if (!j.is_object() || !j.contains("state") || !j["state"].is_string()) return std::nullopt;
  auto text = [&](const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string(); };
  const int ahead = j.contains("ahead") && j["ahead"].is_number_integer() ? j["ahead"].get<int>() : -1;
  return SlurmJobState{text("state"), text("reason"), text("nodes"), text("timeLeft"), ahead};
}

std::string describe_slurm_state(const SlurmJobState& s) {
  if (s.state == "PENDING") {
    std::string inside = s.reason.empty() || s.reason == "None" ? "" : s.reason;
    if (s.ahead >= 0) inside += (inside.empty() ? "" : ", ") + std::to_string(s.ahead) + " ahead";
    return inside.empty() ? "PENDING" : "PENDING (" + inside + ")";
  }
  if (s.state == "RUNNING") {
    std::string words = "RUNNING";
    if (!s.nodes.empty()) words += " on " + s.nodes;
    if (!s.time_left.empty() && s.time_left != "UNLIMITED" && s.time_left != "INVALID") words += ", " + s.time_left + " left";
    return words;
  }
  return s.state;
}

}  // namespace ferry::protocol

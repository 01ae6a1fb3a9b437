// Allocations and the agent's slurm/* wire: see slurm_alloc.hpp.
#include "protocol/slurm_alloc.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace ferry::protocol {

using json = nlohmann::json;

std::optional<DecodeError> from_json(const json& j, SlurmAllocateParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  json options;
  r.required("options", options);
  r.required("name", out.name);
  r.required("cwd", out.cwd);
  r.optional("env", out.env);
  if (auto e = r.error()) return e;
  auto o = slurm_options_from_json(options);
  if (!o) return DecodeError{pointer_append(ptr, "options"), o.error()};
  out.options = std::move(*o);
  return std::nullopt;
}

json to_json(const SlurmAllocateParams& p) {
  return json{{"options", to_json(p.options)}, {"name", p.name}, {"cwd", p.cwd}, {"env", p.env}};
}

json to_json(const SlurmJobIdResult& r) { return json{{"jobId", r.job_id}}; }

std::optional<DecodeError> from_json(const json& j, SlurmJobIdResult& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("jobId", out.job_id);
  return r.error();
}

std::optional<DecodeError> from_json(const json& j, SlurmJobsParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("name", out.name);
  r.optional("jobId", out.job_id);
  r.optional("env", out.env);
  return r.error();
}

json to_json(const SlurmJobsParams& p) {
  json j{{"name", p.name}, {"env", p.env}};
  if (!p.job_id.empty()) j["jobId"] = p.job_id;
  return j;
}

json to_json(const SlurmJobsResult& r) {
  json jobs = json::array();
  for (const auto& i : r.jobs)
    jobs.push_back(json{{"jobId", i.job_id}, {"state", i.state}, {"reason", i.reason}, {"nodes", i.nodes},
                        {"timeLeft", i.time_left}, {"timeLimit", i.time_limit}});
  return json{{"jobs", jobs}};
}

std::optional<DecodeError> from_json(const json& j, SlurmJobInfo& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("jobId", out.job_id);
  r.required("state", out.state);
  r.optional("reason", out.reason);
  r.optional("nodes", out.nodes);
  r.optional("timeLeft", out.time_left);
  r.optional("timeLimit", out.time_limit);
  return r.error();
}

std::optional<DecodeError> from_json(const json& j, SlurmJobsResult& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("jobs", out.jobs);
  return r.error();
}

std::string allocation_job_name(std::string_view project_name, std::string_view remote_root) {
  std::string name = "ferry-alloc-";
  for (char c : project_name) name += (c == ' ' || c == ',' || c == '\n' || c == '\t' || c == '|') ? '_' : c;
  std::uint32_t h = 2166136261u;  // FNV-1a: short, stable across builds and platforms
  for (char c : remote_root) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  static constexpr char kHex[] = "0123456789abcdef";
  name += '-';
  for (int shift = 28; shift >= 0; shift -= 4) name += kHex[(h >> shift) & 0xf];
  return name;
}

std::vector<std::string> allocation_sbatch_arguments(const SlurmJobOptions& o, const std::string& job_name, const std::string& cwd) {
  return sbatch_arguments(o, job_name, "/dev/null", "/dev/null", cwd);
}

std::string hold_script(const std::string& agent) { return "#!" + agent + " --slurm-hold\n"; }

std::vector<std::string> squeue_arguments(const std::string& job_name) {
  return {"squeue", "--me", "--noheader", "--name=" + job_name, "--format=%i|%T|%r|%N|%L|%l"};
}

std::vector<SlurmJobInfo> parse_squeue(std::string_view out) {
  std::vector<SlurmJobInfo> jobs;
  while (!out.empty()) {
    const auto eol = out.find('\n');
    std::string_view line = out.substr(0, eol);
    out = eol == std::string_view::npos ? std::string_view{} : out.substr(eol + 1);
    std::vector<std::string> f;
    for (std::size_t at = 0;;) {
      const auto bar = line.find('|', at);
      f.emplace_back(line.substr(at, bar == std::string_view::npos ? std::string_view::npos : bar - at));
      if (bar == std::string_view::npos) break;
      at = bar + 1;
    }
    for (auto& s : f) {
      while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
      while (!s.empty() && s.front() == ' ') s.erase(0, 1);
    }
    if (f.size() != 6 || f[0].empty()) continue;
    jobs.push_back(SlurmJobInfo{f[0], f[1], f[2], f[3] == "(null)" ? "" : f[3], f[4], f[5]});
  }
  return jobs;
}

std::vector<std::string> srun_agent_arguments(const std::string& job_id, const std::string& node, const std::string& agent,
                                              const std::string& root, const std::string& state_dir) {
  // --overlap: the step shares the allocation's CPUs with the holding batch step and the user's
  // runs; --unbuffered: the agent's frames travel as written, not by lines.
  std::vector<std::string> a{"srun", "--jobid=" + job_id, "--overlap", "--nodes=1", "--ntasks=1", "--unbuffered",
                             "--quiet", "--job-name=ferry-agent"};
  if (!node.empty()) a.push_back("--nodelist=" + node);
  a.insert(a.end(), {"--", agent, "--root", root, "--state-dir", state_dir, "--in-job"});
  return a;
}

std::vector<std::string> srun_step_arguments(const std::string& job_id, const std::string& node, bool tty, int nodes) {
  std::vector<std::string> a{"srun", "--jobid=" + job_id, "--overlap"};
  if (nodes > 1) {
    a.insert(a.end(), {"--nodes=" + std::to_string(nodes), "--ntasks-per-node=1", "--kill-on-bad-exit=1"});
  } else {
    a.insert(a.end(), {"--nodes=1", "--ntasks=1"});
    if (!node.empty()) a.push_back("--nodelist=" + node);
  }
  a.insert(a.end(), {tty ? "--pty" : "--unbuffered", "--disable-status", "--quiet", "--job-name=ferry-run", "--"});
  return a;
}

std::optional<AllocationStep> allocation_step_of(const std::vector<std::string>& argv) {
  if (argv.size() < 3 || argv[0] != "srun" || !argv[1].starts_with("--jobid=")) return std::nullopt;
  const auto dashes = std::find(argv.begin(), argv.end(), "--");
  if (dashes == argv.end() || dashes + 1 == argv.end()) return std::nullopt;
  return AllocationStep{argv[1].substr(8), std::vector<std::string>(dashes + 1, argv.end())};
}

std::optional<long> slurm_duration_seconds(std::string_view text) {
  auto number = [](std::string_view s) -> std::optional<long> {
    long v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty() || v < 0) return std::nullopt;
    return v;
  };
  long days = 0;
  bool had_days = false;
  if (auto dash = text.find('-'); dash != std::string_view::npos) {
    auto d = number(text.substr(0, dash));
    if (!d) return std::nullopt;
    days = *d;
    had_days = true;
    text = text.substr(dash + 1);
  }
  std::vector<long> parts;
  for (std::size_t at = 0;;) {
    const auto colon = text.find(':', at);
    auto v = number(text.substr(at, colon == std::string_view::npos ? std::string_view::npos : colon - at));
    if (!v) return std::nullopt;
    parts.push_back(*v);
    if (colon == std::string_view::npos) break;
    at = colon + 1;
  }
  long h = 0, m = 0, s = 0;
  if (parts.size() == 3) h = parts[0], m = parts[1], s = parts[2];
  else if (parts.size() == 2 && had_days) h = parts[0], m = parts[1];
  else if (parts.size() == 2) m = parts[0], s = parts[1];
  else if (parts.size() == 1 && had_days) h = parts[0];
  else if (parts.size() == 1) m = parts[0];
  else return std::nullopt;
  return ((days * 24 + h) * 60 + m) * 60 + s;
}

}  // namespace ferry::protocol

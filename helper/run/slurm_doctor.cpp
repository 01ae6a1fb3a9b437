// `ferry doctor`'s Slurm line: see slurm_doctor.hpp.
#include "helper/run/slurm_doctor.hpp"

#include <chrono>
#include <sstream>
#include <vector>

#include "protocol/shell_words.hpp"

namespace ferry::run {

std::string slurm_probe_script(const std::map<std::string, std::string>& env) {
  std::string s;
  for (const auto& [k, v] : env) {
    bool name = !k.empty() && !(k[0] >= '0' && k[0] <= '9');
    for (char c : k) name = name && (c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'));
    if (name) s += "export " + k + "=" + protocol::shell_quote(v) + "\n";
  }
  s += "m=''; for c in sbatch squeue scontrol scancel sinfo; do command -v $c >/dev/null 2>&1 || m=\"$m $c\"; done\n"
       "echo \"missing=$m\"\n"
       "echo \"version=$(sbatch --version 2>/dev/null)\"\n"
       "echo \"partitions=$(sinfo -h -o '%P|%a|%D' 2>&1 | tr '\\n' ';')\"\n";
  return s;
}

namespace {

std::map<std::string, std::string> key_values(std::string_view text) {
  std::map<std::string, std::string> out;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);)
    if (auto eq = line.find('='); eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  return out;
}

std::string joined(const std::vector<std::string>& words) {
  std::string all;
  for (const auto& w : words) all += (all.empty() ? "" : ", ") + w;
  return all;
}

}  // namespace

remote::DoctorCheck slurm_check_of(std::string_view probe_output, const protocol::SlurmJobOptions& options) {
  auto kv = key_values(probe_output);
  const std::string fix_path = "put Slurm's commands on the login node's PATH (often `module load slurm`; ferry.json's env "
                               "PATH counts)";
  if (auto m = kv["missing"]; m.find_first_not_of(' ') != std::string::npos)
    return {"slurm", "fail", "the login node has no" + m + " on PATH", fix_path};
  std::vector<std::string> partitions;
  std::string wanted_line;
  std::istringstream in(kv["partitions"]);
  std::string said;  // sinfo's own words when it could not list (no controller, no config)
  for (std::string p; std::getline(in, p, ';');) {
    if (p.empty()) continue;
    if (p.find('|') == std::string::npos) {
      said += (said.empty() ? "" : " ") + p;
      continue;
    }
    std::string name = p.substr(0, p.find('|'));
    const bool is_default = !name.empty() && name.back() == '*';
    if (is_default) name.pop_back();
    partitions.push_back(name);
    if (name == options.partition || (options.partition.empty() && is_default)) wanted_line = p;
  }
  const std::string version = kv["version"].empty() ? "slurm" : kv["version"];
  if (partitions.empty())
    return {"slurm", "fail", version + ", but sinfo lists no partition" + (said.empty() ? "" : ": " + said),
            "check that slurmctld answers `sinfo` on the login node (SLURM_CONF, the munge service)"};
  if (wanted_line.empty())
    return {"slurm", "fail",
            options.partition.empty() ? version + ": the cluster has no default partition"
                                      : version + ": no partition \"" + options.partition + "\" (there are: " + joined(partitions) + ")",
            "set slurm.partition in ferry.json to one of them"};
  const auto a = wanted_line.find('|'), b = wanted_line.find('|', a + 1);
  std::string name = wanted_line.substr(0, a);
  if (name.ends_with('*')) name.pop_back();  // sinfo's mark of the default partition
  const std::string avail = wanted_line.substr(a + 1, b - a - 1), nodes = wanted_line.substr(b + 1);
  const std::string detail = version + ", partition " + name + " " + avail + " with " + nodes + " node(s)";
  if (avail != "up") return {"slurm", "warn", detail, "jobs wait until the partition is up"};
  return {"slurm", "pass", detail, ""};
}

remote::DoctorCheck doctor_slurm_check(remote::SshEndpoint& e, const protocol::SlurmJobOptions& options,
                                       const std::map<std::string, std::string>& env) {
  auto r = e.exec(slurm_probe_script(env), std::chrono::seconds(60));
  if (!r) return {"slurm", "warn", "the Slurm probe did not run: " + r.error().message, "re-run ferry doctor"};
  return slurm_check_of(r->out, options);
}

}  // namespace ferry::run

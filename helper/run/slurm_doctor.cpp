// `ferry doctor`'s Slurm line: see slurm_doctor.hpp.
#include "helper/run/slurm_doctor.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <sstream>
#include <vector>

#include "protocol/shell_words.hpp"

namespace ferry::run {
namespace {

// ferry.json's env as `export NAME='value'` lines (names a shell cannot take are left out).
std::string env_exports(const std::map<std::string, std::string>& env) {
  std::string s;
  for (const auto& [k, v] : env) {
    bool name = !k.empty() && !(k[0] >= '0' && k[0] <= '9');
    for (char c : k) name = name && (c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'));
    if (name) s += "export " + k + "=" + protocol::shell_quote(v) + "\n";
  }
  return s;
}

}  // namespace

std::string slurm_probe_script(const std::map<std::string, std::string>& env) {
  std::string s = env_exports(env);
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

std::vector<std::string> node_probe_paths(const std::vector<std::string>& mapping_roots) {
  std::vector<std::string> paths;
  for (const auto& root : mapping_roots)
    if (std::find(paths.begin(), paths.end(), root) == paths.end()) paths.push_back(root);
  paths.emplace_back(kFerryCacheDir);
  return paths;
}

std::string slurm_node_probe_script(const std::map<std::string, std::string>& env, const protocol::SlurmJobOptions& options,
                                    const std::vector<std::string>& paths, std::string_view nonce, int wait_s) {
  using protocol::shell_quote;
  std::string s = env_exports(env);
  s += "N=" + shell_quote(nonce) + "\n";
  std::string files, cleanup;
  for (std::size_t i = 1; i <= paths.size(); ++i) {
    const std::string n = std::to_string(i);
    files += " \"$F" + n + "\"";
    cleanup += "F" + n + "=; ";
  }
  // The markers go when the script ends, also when the link drops (HUP) or the exec times out.
  s += cleanup + "trap 'rm -f --" + files + " 2>/dev/null' EXIT; trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM\n";
  for (std::size_t i = 1; i <= paths.size(); ++i) {
    const std::string n = std::to_string(i), R = "R" + n, D = "D" + n, F = "F" + n;
    s += R + "=" + protocol::shell_quote_home(paths[i - 1]) + "; " + D + "=$" + R + "\n";
    // Before the first sync the root is not there: its nearest existing parent stands for it.
    s += "while [ ! -d \"$" + D + "\" ]; do P=$(dirname -- \"$" + D + "\"); [ \"$P\" = \"$" + D + "\" ] && break; " + D + "=$P; done\n";
    s += "printf '%s\\n' \"root" + n + "=$" + R + "\"\n";
    s += "if (umask 077 && printf '%s\\n' \"$N\" >\"$" + D + "/.ferry-doctor-$N\") 2>/dev/null; then " + F + "=\"$" + D +
         "/.ferry-doctor-$N\"; printf '%s\\n' \"dir" + n + "=$" + D + "\"; else printf '%s\\n' \"dir" + n + "=!$" + D + "\"; fi\n";
  }
  // On the node: its name, then each marker's content (empty when it cannot be read).
  const std::string on_node =
      "echo \"node=${SLURMD_NODENAME:-$(hostname)}\"; i=0; for f; do i=$((i+1)); "
      "printf \"seen%s=%s\\n\" \"$i\" \"$(cat -- \"$f\" 2>/dev/null)\"; done";
  std::vector<std::string> srun{"srun", "--immediate=" + std::to_string(wait_s), "--nodes=1", "--ntasks=1", "--time=1",
                                "--job-name=ferry-doctor", "--chdir=/"};
  if (!options.partition.empty()) srun.push_back("--partition=" + options.partition);
  if (!options.account.empty()) srun.push_back("--account=" + options.account);
  if (!options.qos.empty()) srun.push_back("--qos=" + options.qos);
  if (!options.constraint.empty()) srun.push_back("--constraint=" + options.constraint);
  for (const auto& w : {std::string("/bin/sh"), std::string("-c"), on_node, std::string("ferry-doctor")}) srun.push_back(w);
  // timeout(1) bounds what --immediate does not: a node that takes the step and never runs it.
  s += "T=; command -v timeout >/dev/null 2>&1 && T='timeout " + std::to_string(wait_s + 45) + "'\n";
  s += "exec 3>&1\nE=$( { $T " + protocol::shell_command(srun) + files + " </dev/null 2>&1 1>&3 3>&-; echo \"srun_status=$?\" >&3; } )\n";
  s += "printf '%s\\n' \"srun_err=$(printf '%s' \"$E\" | tr '\\n' ' ' | cut -c1-400)\"\n";
  return s;
}

namespace {

std::string listed(const std::vector<std::string>& words) {
  std::string all;
  for (std::size_t i = 0; i < words.size(); ++i) all += (i == 0 ? "" : i + 1 == words.size() ? " and " : ", ") + words[i];
  return all;
}

// "mapping root ~/proj", "mapping roots ~/a and ~/b", "~/.cache/ferry".
std::string named(const std::vector<std::string>& roots, bool cache) {
  std::string s;
  if (!roots.empty()) s = (roots.size() == 1 ? "mapping root " : "mapping roots ") + listed(roots);
  if (cache) s += (s.empty() ? "" : " and ") + std::string(kFerryCacheDir);
  return s;
}

}  // namespace

remote::DoctorCheck slurm_node_check_of(std::string_view probe_output, const std::vector<std::string>& paths,
                                        std::string_view nonce, int wait_s) {
  auto kv = key_values(probe_output);
  const std::string node = kv["node"];
  if (node.empty()) {
    const std::string err = kv["srun_err"];
    const bool queued = kv["srun_status"] == "124" || err.find("Requested nodes are busy") != std::string::npos ||
                        err.find("queued and waiting") != std::string::npos;
    if (queued)
      return {"slurm nodes", "warn", "not checked: the queue did not start a probe within " + std::to_string(wait_s) + " s",
              "run ferry doctor again when the partition has a free node (squeue shows what is waiting)"};
    const std::string status = kv.contains("srun_status") ? " (exit " + kv["srun_status"] + ")" : "";
    return {"slurm nodes", "warn", "not checked: srun did not start a probe" + status + (err.empty() ? "" : ": " + err),
            "check ferry.json's slurm block (partition, account, qos, constraint): a job with them has to start"};
  }
  std::vector<std::string> seen_roots, unseen_roots, unwritten, unsaid, notes;
  bool cache_seen = false, cache_unseen = false;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string n = std::to_string(i + 1), root = kv["root" + n], dir = kv["dir" + n];
    const bool cache = paths[i] == kFerryCacheDir;
    if (dir.empty() || dir[0] == '!') {
      unwritten.push_back(paths[i] + " (in " + (dir.empty() ? root : dir.substr(1)) + ")");
    } else if (!kv.contains("seen" + n)) {
      unsaid.push_back(paths[i]);
    } else if (kv["seen" + n] == nonce) {
      if (cache) {
        cache_seen = true;
      } else {
        seen_roots.push_back(paths[i]);
        if (dir != root) notes.push_back(paths[i] + " is not there yet: its parent " + dir + " was checked");
      }
    } else if (cache) {
      cache_unseen = true;
    } else {
      unseen_roots.push_back(paths[i] + " (" + root + ")");
    }
  }
  if (!unseen_roots.empty() || cache_unseen) {
    std::string fix;
    if (!unseen_roots.empty())
      fix = "put the mapping root under a file system the compute nodes share with the login node, such as $HOME or "
            "/scratch (ferry.json's mappings[].remote)";
    if (cache_unseen)
      fix += (fix.empty() ? "" : "; ") + std::string("ferry's agent and run folders are in ~/.cache/ferry: the compute nodes "
                                                     "have to share the login node's home directory");
    return {"slurm nodes", "fail",
            named(unseen_roots, cache_unseen) + (unseen_roots.size() + cache_unseen > 1 ? " are" : " is") +
                " not visible on compute node " + node + ": a file written there on the login node is not there on the node",
            fix};
  }
  if (!unwritten.empty() || !unsaid.empty()) {
    std::string detail = "not checked:";
    if (!unwritten.empty()) detail += " no marker file could be written for " + listed(unwritten);
    if (!unsaid.empty()) detail += std::string(unwritten.empty() ? "" : ";") + " node " + node + " said nothing of " + listed(unsaid);
    return {"slurm nodes", "warn", detail, "check that those directories exist and are writable on the login node"};
  }
  std::string detail = (seen_roots.empty() ? named({}, cache_seen) : named(seen_roots, false)) +
                       (seen_roots.size() > 1 ? " are" : " is") + " visible on compute node " + node;
  if (cache_seen && !seen_roots.empty()) detail += ", and so is " + std::string(kFerryCacheDir);
  for (const auto& note : notes) detail += " (" + note + ")";
  return {"slurm nodes", "pass", detail, ""};
}

std::vector<remote::DoctorCheck> doctor_slurm_checks(remote::SshEndpoint& e, const protocol::SlurmJobOptions& options,
                                                     const std::map<std::string, std::string>& env,
                                                     const std::vector<std::string>& mapping_roots) {
  auto r = e.exec(slurm_probe_script(env), std::chrono::seconds(60));
  std::vector<remote::DoctorCheck> checks{
      r ? slurm_check_of(r->out, options)
        : remote::DoctorCheck{"slurm", "warn", "the Slurm probe did not run: " + r.error().message, "re-run ferry doctor"}};
  if (checks[0].status != "pass") {
    checks.push_back({"slurm nodes", "warn", "not checked: the slurm line above is not a pass", "fix that first"});
    return checks;
  }
  std::random_device random;
  std::string nonce;
  for (int i = 0; i < 16; ++i) nonce += "0123456789abcdef"[random() % 16];
  const auto paths = node_probe_paths(mapping_roots);
  auto probe = e.exec(slurm_node_probe_script(env, options, paths, nonce, kNodeProbeWaitSeconds),
                      std::chrono::seconds(kNodeProbeWaitSeconds + 60));
  checks.push_back(probe ? slurm_node_check_of(probe->out, paths, nonce, kNodeProbeWaitSeconds)
                         : remote::DoctorCheck{"slurm nodes", "warn", "not checked: the probe did not run: " + probe.error().message,
                                               "re-run ferry doctor"});
  return checks;
}

}  // namespace ferry::run

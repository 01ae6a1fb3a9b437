// ferry doctor over SSH (run_doctor): the ssh config, the connection and host key, the agent, then
// one shell probe of the box (system, disk, NVIDIA, CUDA, python and torch, sshd hardening, the
// firewall), each a pass, warn or fail line with its fix. Also connect_next_step, the fix for a
// failed connect that `ferry connect` prints.
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include "ferry/version.hpp"
#include "helper/remote/agent_builds.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "protocol/shell_words.hpp"

namespace ferry::remote {
namespace {

using namespace std::chrono_literals;
using protocol::shell_quote;
using KeyValues = std::map<std::string, std::vector<std::string>>;

KeyValues parse_key_values(const std::string& text) {
  KeyValues out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    out[line.substr(0, eq)].push_back(line.substr(eq + 1));
  }
  return out;
}

std::string first(const KeyValues& kv, const std::string& key) {
  auto it = kv.find(key);
  return it == kv.end() || it->second.empty() ? "" : it->second.front();
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The values of `key` (every line the probe printed for it), none when it printed none.
std::vector<std::string> all(const KeyValues& kv, const std::string& key) {
  auto it = kv.find(key);
  return it == kv.end() ? std::vector<std::string>{} : it->second;
}

// The check lines of one run, in order.
struct Checks {
  std::vector<DoctorCheck> lines;
  void add(std::string name, std::string status, std::string detail, std::string fix = {}) {
    lines.push_back(DoctorCheck{std::move(name), std::move(status), std::move(detail), std::move(fix)});
  }
};

// One shell script that prints key=value lines for every box check (parse_key_values reads them).
// `py`: the interpreter's words (none when ferry.json's setting was refused), as "$@" so the box's
// shell never splits or expands them again.
std::string box_probe_script(const std::string& root, const std::vector<std::string>& py) {
  std::string set_py = "set --";
  for (const auto& w : py) set_py += " " + protocol::shell_quote_home(w);
  return set_py + "\n" +
      "echo os=$(uname -s); echo arch=$(uname -m); echo kernel=$(uname -r)\n"
      "echo glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')\n"
      "ldd --version 2>&1 | grep -qi musl && echo libc=musl\n"
      "echo disk_kb=$(df -Pk " + shell_quote(root) + " 2>/dev/null | awk 'NR==2{print $4}')\n"
      "if command -v nvidia-smi >/dev/null 2>&1; then echo smi=yes; "
      "nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/gpu=/'; "
      "echo cuda_driver=$(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | awk '{print $3}'); fi\n"
      "echo cudart=$( (ldconfig -p 2>/dev/null | grep -o 'libcudart.so.[0-9.]*' | head -1) )\n"
      "if [ $# -gt 0 ]; then echo python=$(\"$@\" -c 'import sys;print(sys.version.split()[0])' 2>/dev/null)\n"
      "\"$@\" -c 'import torch;print(\"torch=\"+torch.__version__);print(\"torch_cuda=\"+str(torch.cuda.is_available()));"
      "print(\"torch_cuda_version=\"+str(torch.version.cuda))' 2>/dev/null; fi\n"
      "if S=$(sshd -T 2>/dev/null) && [ -n \"$S\" ]; then echo sshd_source=sshd -T; else echo sshd_source=/etc/ssh/sshd_config; "
      "S=$(cat /etc/ssh/sshd_config /etc/ssh/sshd_config.d/*.conf 2>/dev/null | grep -v '^[[:space:]]*#'); fi\n"
      "echo \"$S\" | grep -iE '^[[:space:]]*(permitrootlogin|passwordauthentication|allowusers)[[:space:]]' | "
      "sed 's/^[[:space:]]*/sshd=/'\n"
      "if command -v ufw >/dev/null 2>&1 && ufw status >/dev/null 2>&1; then echo fw=ufw $(ufw status | head -1); "
      "elif command -v nft >/dev/null 2>&1 && nft list ruleset >/dev/null 2>&1; then echo fw=nftables $(nft list ruleset | grep -c .) lines; "
      "elif command -v iptables >/dev/null 2>&1 && iptables -S >/dev/null 2>&1; then echo fw=iptables $(iptables -S | grep -vc '^-P') rules; "
      "else echo fw=unreadable; fi\n";
}

// The ssh config, the connection, the host key and the agent: the agent's hello, or nullopt when
// the connection failed (its line says why and the run ends there).
std::optional<AgentInfo> check_link(Checks& out, const DoctorOptions& options, const ssh::HostConfig& resolved,
                                    SshEndpoint& e) {
  out.add("ssh config", "pass",
          options.endpoint.host + " -> " + ssh::describe(resolved) +
              (resolved.proxy_jump.empty() ? "" : " via " + std::to_string(resolved.proxy_jump.size()) + " ProxyJump hop(s)"));
  auto started = Clock::now();
  auto info = e.connect(options.timeout);
  if (!info) {
    std::string kind = info.error().data && info.error().data->contains("kind") ? (*info.error().data)["kind"].get<std::string>() : "";
    std::string fix = kind == "hostKeyUnknown"   ? "verify the fingerprint with your provider, then: ferry trust " + options.endpoint.host
                      : kind == "hostKeyChanged" ? "if the box was rebuilt, remove the old known_hosts entry (ssh-keygen -R) and ferry trust it again; otherwise do not connect"
                      : !connect_next_step(info.error()).empty() ? connect_next_step(info.error())
                                                                 : "see the message above";
    out.add("connection", "fail", info.error().message, fix);
    return std::nullopt;
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count();
  auto hk = e.host_key();
  out.add("connection", "pass", e.description() + " in " + std::to_string(ms) + " ms");
  out.add("host key", "pass", hk.key.type + " " + hk.fingerprint + (hk.newly_recorded ? " (recorded now in " + hk.recorded_in + ")" : " (known_hosts)"));
  auto rep = e.install_report();
  if (info->version == kVersion)
    out.add("agent", "pass", "ferry-agent " + info->version + " at " + rep.remote_path + (rep.installed ? " (installed now)" : ""));
  else
    out.add("agent", "fail", "agent reports " + info->version + ", this ferry is " + std::string(kVersion), "reconnect to reinstall it");
  return *info;
}

void check_system(Checks& out, const KeyValues& kv, const std::string& root) {
  // The agent is static and needs no libc of the box's; the libc is shown for what the user's own
  // programs (python wheels, ferry-train) will link against.
  std::string glibc = first(kv, "glibc");
  std::string libc = !glibc.empty() ? ", glibc " + glibc : first(kv, "libc") == "musl" ? ", musl libc" : ", libc unknown";
  out.add("system", "pass", first(kv, "os") + " " + first(kv, "arch") + ", kernel " + first(kv, "kernel") + libc);
  std::string disk = first(kv, "disk_kb");
  if (disk.empty()) {
    out.add("disk", "warn", "cannot read free space at " + root, "check that " + root + " exists and df works");
  } else {
    double gb = std::stod(disk) / (1024.0 * 1024.0);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f GiB free at ", gb);
    if (gb < 1) out.add("disk", "fail", buf + root, "free space or attach a bigger volume: checkpoints and datasets need room");
    else if (gb < 10) out.add("disk", "warn", buf + root, "under 10 GiB: checkpoints may fill it");
    else out.add("disk", "pass", buf + root);
  }
}

// NVIDIA driver and GPUs, CUDA, python and torch.
void check_gpu_stack(Checks& out, SshEndpoint& e, const KeyValues& kv, const std::string& py) {
  // GPUs: the agent's NVML view when it has one, else nvidia-smi.
  std::vector<std::string> gpus;
  if (auto g = e.call("gpu/status", json::object(), 10s); g && g->contains("gpus")) {
    for (const auto& gpu : (*g)["gpus"]) gpus.push_back(gpu.value("name", std::string("GPU")));
  } else {
    gpus = all(kv, "gpu");
  }
  if (!gpus.empty()) {
    std::string list;
    for (const auto& gpu : gpus) list += (list.empty() ? "" : "; ") + gpu;
    out.add("nvidia", "pass", std::to_string(gpus.size()) + " GPU(s): " + list);
  } else if (first(kv, "smi") == "yes") {
    out.add("nvidia", "fail", "nvidia-smi is installed but lists no GPU", "the driver cannot see the GPU: reboot, or check the driver version against the kernel");
  } else {
    out.add("nvidia", "warn", "no NVIDIA driver (nvidia-smi not found)", "pick a GPU image, or install the NVIDIA driver");
  }
  std::string cudart = first(kv, "cudart"), cuda_driver = first(kv, "cuda_driver");
  if (!cuda_driver.empty() || !cudart.empty())
    out.add("cuda", "pass", (cuda_driver.empty() ? "" : "driver supports CUDA " + cuda_driver) +
                                (cudart.empty() ? "" : std::string(cuda_driver.empty() ? "" : ", ") + cudart));
  else
    out.add("cuda", "warn", "no CUDA runtime found", "PyTorch wheels bring their own CUDA runtime; otherwise install the CUDA toolkit");
  std::string python = first(kv, "python"), torch = first(kv, "torch");
  if (python.empty()) out.add("python", "fail", py + " not found on the box", "install python3 or set \"interpreter\" in ferry.json");
  else out.add("python", "pass", py + " " + python);
  if (torch.empty()) {
    out.add("torch", "warn", "torch is not importable by " + py, py + " -m pip install torch");
  } else {
    bool cuda = first(kv, "torch_cuda") == "True";
    if (cuda) out.add("torch", "pass", "torch " + torch + " sees CUDA " + first(kv, "torch_cuda_version"));
    else if (!gpus.empty()) out.add("torch", "fail", "torch " + torch + " does not see CUDA (built for CUDA " + first(kv, "torch_cuda_version") + ")", "install a torch build matching the driver's CUDA version");
    else out.add("torch", "warn", "torch " + torch + " (CPU only)", "fine for CPU work; on a GPU box install a CUDA build of torch");
  }
}

// SSH hardening (PermitRootLogin, PasswordAuthentication, AllowUsers) and the firewall.
void check_hardening(Checks& out, const KeyValues& kv) {
  std::map<std::string, std::string> sshd;
  for (const auto& line : all(kv, "sshd")) {
    std::istringstream in(line);
    std::string k, v;
    in >> k;
    std::getline(in, v);
    auto s = v.find_first_not_of(" \t");
    v = s == std::string::npos ? "" : v.substr(s);
    k = lower(k);
    if (!sshd.count(k)) sshd[k] = v;  // sshd_config: the first value wins
  }
  std::string src = first(kv, "sshd_source");
  std::string prl = lower(sshd.count("permitrootlogin") ? sshd["permitrootlogin"] : "prohibit-password");
  if (prl == "yes") out.add("sshd PermitRootLogin", "warn", "yes (" + src + ")", "set PermitRootLogin prohibit-password (or no) in /etc/ssh/sshd_config");
  else out.add("sshd PermitRootLogin", "pass", prl + " (" + src + ")");
  std::string pa = lower(sshd.count("passwordauthentication") ? sshd["passwordauthentication"] : "yes");
  if (pa == "yes") out.add("sshd PasswordAuthentication", "warn", "yes (" + src + ")", "set PasswordAuthentication no: keys only");
  else out.add("sshd PasswordAuthentication", "pass", pa + " (" + src + ")");
  if (sshd.count("allowusers")) out.add("sshd AllowUsers", "pass", sshd["allowusers"]);
  else out.add("sshd AllowUsers", "warn", "not set: every account may log in", "AllowUsers <you> in /etc/ssh/sshd_config limits logins");
  std::string fw = first(kv, "fw");
  if (fw == "unreadable" || fw.empty()) out.add("firewall", "warn", "status not readable as this user", "check the provider's security group / firewall rules: only port 22 should be open");
  else if (fw.find("inactive") != std::string::npos) out.add("firewall", "warn", fw, "enable it (ufw allow 22 && ufw enable) or rely on the provider's firewall");
  else out.add("firewall", "pass", fw);
}

}  // namespace

std::string connect_next_step(const ResponseError& error) {
  const std::string kind = error.data && error.data->contains("kind") && (*error.data)["kind"].is_string()
                               ? (*error.data)["kind"].get<std::string>()
                               : "";
  if (kind == "authFailed") return "add your public key to ~/.ssh/authorized_keys on the box, or load it into ssh-agent (ssh-add)";
  if (kind == "timeout" || kind == "connectFailed")
    return "check the address/port, that the box is running, and any firewall or security group";
  return {};
}

json to_json(const DoctorCheck& c) {
  json j{{"check", c.name}, {"status", c.status}, {"detail", c.detail}};
  if (!c.fix.empty()) j["fix"] = c.fix;
  return j;
}

std::vector<DoctorCheck> run_doctor(DoctorOptions options) {
  Checks out;
  // This ferry's own install first: an agent of another build fails on every box.
  for (auto& a : check_agent_builds()) out.add("agent " + a.arch, a.status, a.detail, a.fix);
  auto resolved = ssh::resolve_host(options.endpoint.host, options.endpoint.ssh_config);
  if (!resolved) {
    out.add("ssh config", "fail", resolved.error().to_string(), "fix the line named above in your ssh config");
    return out.lines;
  }
  options.endpoint.reconnect = false;
  options.endpoint.on_state = [](const HostState&) {};
  SshEndpoint e(options.endpoint);
  auto info = check_link(out, options, *resolved, e);
  if (!info) return out.lines;
  std::string root = info->root;
  std::string py = options.interpreter.empty() ? "python3" : options.interpreter;
  auto words = protocol::interpreter_words(py);
  auto r = e.exec(box_probe_script(root, words ? *words : std::vector<std::string>{}), options.timeout);
  if (!r) {
    out.add("remote checks", "fail", r.error().message, "re-run ferry doctor; the link dropped");
    e.close();
    return out.lines;
  }
  auto kv = parse_key_values(r->out);
  check_system(out, kv, root);
  if (!words) out.add("interpreter", "fail", "ferry.json /interpreter \"" + py + "\" cannot be run: " + words.error(), "set \"interpreter\" to the box's Python 3");
  check_gpu_stack(out, e, kv, py);
  check_hardening(out, kv);
  if (options.extra_checks)
    for (auto& c : options.extra_checks(e)) out.lines.push_back(std::move(c));
  e.close();
  return out.lines;
}

}  // namespace ferry::remote

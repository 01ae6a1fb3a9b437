// Bulk lanes through the OpenSSH client, what every platform shares (the client, the argv): see
// openssh_lane.hpp. Starting one is posix/openssh_lane_process.cpp.
#include "helper/remote/openssh_lane.hpp"

#include <cstdlib>

#include "common/executables.hpp"

namespace ferry::remote {
namespace {

namespace fs = std::filesystem;

// Cheapest first where AES-NI runs GCM (here: half chacha20-poly1305's client CPU per byte); the
// others keep a server without GCM reachable.
constexpr std::string_view kCiphers = "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes128-ctr";

}  // namespace

std::optional<fs::path> find_openssh_client() {
  if (const char* v = std::getenv("FERRY_OPENSSH"); v && *v) {
    std::string s(v);
    if (s == "none" || s == "0") return std::nullopt;
    if (s.find('/') == std::string::npos && s.find('\\') == std::string::npos) return platform::find_on_path(s);
    return platform::is_executable_file(s) ? std::optional<fs::path>(s) : std::nullopt;
  }
  return platform::find_on_path("ssh");
}

std::string openssh_lane_unsupported(const ssh::HostConfig& host) {
  if (auto why = openssh_transports_unavailable(); !why.empty()) return why;
  if (!host.proxy_jump.empty()) return "the host is reached through ProxyJump";
  if (host.proxy_command) return "the host is reached through a ProxyCommand";
  if (host.hostname.empty() || host.hostname.starts_with('-') || host.user.starts_with('-')) return "no usable host name";
  return "";
}

std::string host_key_algorithms_for(std::string_view key_type) {
  // An RSA key is shown under its SHA-2 signature algorithms (OpenSSH 8.8+ refuses ssh-rsa).
  if (key_type == "ssh-rsa") return "rsa-sha2-512,rsa-sha2-256,ssh-rsa";
  return std::string(key_type);
}

std::vector<std::string> openssh_client_argv(const OpenSshLaneSpec& spec, std::string_view key_type) {
  const auto& h = spec.host;
  std::vector<std::string> argv{spec.ssh.string(), "-F", "none", "-T", "-x", "-a", "-p", std::to_string(h.port), "-l", h.user};
  auto opt = [&argv](const std::string& o) {
    argv.push_back("-o");
    argv.push_back(o);
  };
  // Never a prompt, never a key recorded: the child takes the key the link checked, or nothing.
  opt("BatchMode=yes");
  opt("StrictHostKeyChecking=yes");
  opt("UpdateHostKeys=no");
  opt("CheckHostIP=no");
  opt("HostKeyAlias=" + std::string(kOpenSshLaneAlias));
  opt("UserKnownHostsFile=" + spec.known_hosts.string());
  opt("GlobalKnownHostsFile=none");
  opt("HostKeyAlgorithms=" + host_key_algorithms_for(key_type));
  // The link's identities: its explicit files (or OpenSSH's defaults, which ssh tries itself).
  if (h.identities_only) opt("IdentitiesOnly=yes");
  if (h.identity_files_explicit)
    for (const auto& f : h.identity_files) opt("IdentityFile=" + f);
  if (spec.agent_socket) opt("IdentityAgent=" + (spec.agent_socket->empty() ? std::string("none") : *spec.agent_socket));
  opt("PasswordAuthentication=no");
  opt("KbdInteractiveAuthentication=no");
  opt("ClearAllForwardings=yes");
  opt("Compression=no");  // the agent compresses what shrinks; a tunnel's bytes are the user's
  opt("Ciphers=" + std::string(kCiphers));
  opt("ConnectTimeout=" + std::to_string(spec.connect_timeout_s));
  opt("ServerAliveInterval=" + std::to_string(spec.alive_interval_s));
  opt("ServerAliveCountMax=" + std::to_string(spec.alive_count_max));
  opt("LogLevel=QUIET");  // its refusals would land in the user's terminal or serve's log
  return argv;
}

std::vector<std::string> openssh_lane_argv(const OpenSshLaneSpec& spec, std::string_view key_type, const std::string& command) {
  auto argv = openssh_client_argv(spec, key_type);
  for (const char* o : {"ControlMaster=no", "ControlPath=none", "PermitLocalCommand=no"}) {
    argv.push_back("-o");
    argv.push_back(o);
  }
  argv.push_back("--");
  argv.push_back(spec.host.hostname);
  argv.push_back(command);
  return argv;
}

}  // namespace ferry::remote

// Bulk lanes through the OpenSSH client: see openssh_lane.hpp.
#include "helper/remote/openssh_lane.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <system_error>

#include <spdlog/spdlog.h>

#include "helper/remote/byte_stream.hpp"
#include "helper/remote/child_process.hpp"

namespace ferry::remote {
namespace {

namespace fs = std::filesystem;

// Cheapest first where AES-NI runs GCM (here: half chacha20-poly1305's client CPU per byte); the
// others keep a server without GCM reachable.
constexpr std::string_view kCiphers = "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes128-ctr";
// A pipe of 1 MiB instead of 64 KiB: ssh and the helper each wake once per MiB, not per 64 KiB.
constexpr int kPipeBytes = 1 << 20;

// The child's pipes as a ByteStream that owns the child: closing it sends EOF to ssh (which ends
// the remote agent); a child still there a moment later is killed and reaped.
class ChildStream final : public ByteStream {
 public:
  ChildStream(std::unique_ptr<ChildProcess> child, ChildProcess::Spawned fds)
      : child_(std::move(child)), fds_(std::make_unique<FdStream>(fds.stdout_fd, fds.stdin_fd)) {}
  ~ChildStream() override {
    fds_.reset();
    (void)child_->wait_for(std::chrono::milliseconds(300));
  }
  ReadResult read_some(std::span<char> buffer, std::optional<Clock::time_point> deadline) override {
    return fds_->read_some(buffer, deadline);
  }
  std::expected<void, std::string> write_all(std::string_view bytes) override { return fds_->write_all(bytes); }
  void close_write() override { fds_->close_write(); }
  void interrupt() override { fds_->interrupt(); }
  ChildProcess& child() { return *child_; }

 private:
  std::unique_ptr<ChildProcess> child_;
  std::unique_ptr<FdStream> fds_;
};

std::optional<fs::path> on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<fs::path> find_openssh_client() {
  if (const char* v = std::getenv("FERRY_OPENSSH"); v && *v) {
    std::string s(v);
    if (s == "none" || s == "0") return std::nullopt;
    if (s.find('/') == std::string::npos) return on_path(s);
    return ::access(v, X_OK) == 0 ? std::optional<fs::path>(s) : std::nullopt;
  }
  return on_path("ssh");
}

std::string openssh_lane_unsupported(const ssh::HostConfig& host) {
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

std::unique_ptr<LaneKnownHosts> LaneKnownHosts::create(const ssh::PublicKey& key) {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string tmpl = (base / "ferry-lane-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return nullptr;  // mode 0700
  std::unique_ptr<LaneKnownHosts> out(new LaneKnownHosts(tmpl));
  // Port 22: written bare, as OpenSSH looks an alias up (without the port).
  if (auto r = ssh::append_known_host(out->file_, kOpenSshLaneAlias, 22, key); !r) {
    spdlog::debug("lane known_hosts: {}", r.error());
    return nullptr;
  }
  return out;
}

LaneKnownHosts::~LaneKnownHosts() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::unique_ptr<AgentLink> open_openssh_lane(const OpenSshLaneSpec& spec, std::string_view key_type, const std::string& command,
                                             Clock::time_point deadline) {
  auto child = std::make_unique<ChildProcess>();
  auto spawned = child->spawn(openssh_lane_argv(spec, key_type, command));
  if (!spawned) {
    spdlog::debug("{}: OpenSSH lane: {}", spec.host.alias, spawned.error());
    return nullptr;
  }
  ::fcntl(spawned->stdout_fd, F_SETPIPE_SZ, kPipeBytes);
  ::fcntl(spawned->stdin_fd, F_SETPIPE_SZ, kPipeBytes);
  auto stream = std::make_unique<ChildStream>(std::move(child), *spawned);
  ChildProcess* raw = &stream->child();
  auto agent = std::make_unique<AgentLink>(std::move(stream));
  agent->set_exit_describer([raw] {
    auto status = raw->wait_for(std::chrono::milliseconds(500));
    return "ssh " + (status ? ChildProcess::describe_status(*status) : std::string("closed its output"));
  });
  if (auto info = agent->handshake(deadline); !info) {
    spdlog::debug("{}: OpenSSH lane did not answer: {}", spec.host.alias, info.error().message);
    agent->stop();
    return nullptr;
  }
  return agent;
}

}  // namespace ferry::remote

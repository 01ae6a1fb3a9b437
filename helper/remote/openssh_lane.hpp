// Bulk lanes through the OpenSSH client: an agent started by `ssh` (a child process on pipes)
// instead of on a libssh2 channel, so a big file's decryption runs in another process (another
// core) and with AES-GCM, which libssh2 1.10 lacks (`ssh -c aes128-gcm@openssh.com host cat`
// costs ~1.2 core-seconds per GiB here). One is used by default on a short link, for big files
// (SshEndpoint's kAutoOpenSshLanes, SyncOptions::cpu_lanes_above): on 2 cores it saves 6-17 % of
// a 1 GiB transfer's CPU now that frames write chunks in place (bench/results/wan.md, session 14;
// in session 13 the pipe hop ate the cipher's saving). The child verifies the
// host key the link verified (and only that one: a known_hosts file of one line under an alias),
// never prompts, and reads no ssh config.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "helper/remote/agent_link.hpp"
#include "helper/ssh/known_hosts.hpp"
#include "helper/ssh/ssh_config.hpp"

namespace ferry::remote {

// The OpenSSH client to use: $FERRY_OPENSSH if set ("none" or "0": none), else `ssh` on PATH.
std::optional<std::filesystem::path> find_openssh_client();

// Why this platform has no lanes or tunnel master ("" when it has them): Windows' OpenSSH has no
// ControlMaster, and its pipes need a stream of their own (docs/windows.md).
std::string openssh_transports_unavailable();

// Why `host` cannot be reached by a lane of this kind ("" when it can): proxies are the link's
// business (ferry resolves ProxyJump itself; a lane would have to repeat it).
std::string openssh_lane_unsupported(const ssh::HostConfig& host);

struct OpenSshLaneSpec {
  std::filesystem::path ssh;          // the client
  ssh::HostConfig host;               // as the link resolved it
  std::filesystem::path known_hosts;  // holds the link's host key under kOpenSshLaneAlias
  std::optional<std::string> agent_socket;  // SessionOptions::agent_socket: unset = $SSH_AUTH_SOCK, "" = none
  int connect_timeout_s = 15;
  int alive_interval_s = 4;
  int alive_count_max = 3;
};

inline constexpr std::string_view kOpenSshLaneAlias = "ferry-lane";

// The host key algorithms OpenSSH must ask for to be shown a key of `key_type`.
std::string host_key_algorithms_for(std::string_view key_type);

// ssh's argv up to its own options, shared by lanes and the tunnel master (openssh_mux.hpp):
// the link's user, port, identities and host key only, no prompt, no ssh config, no forwarding
// from anywhere else (pure: the options are the contract, tests read them).
std::vector<std::string> openssh_client_argv(const OpenSshLaneSpec& spec, std::string_view key_type);

// ssh's argv for `command` on the box.
std::vector<std::string> openssh_lane_argv(const OpenSshLaneSpec& spec, std::string_view key_type, const std::string& command);

// A private directory with a known_hosts file of one line (the alias and `key`); removed with it.
class LaneKnownHosts {
 public:
  static std::unique_ptr<LaneKnownHosts> create(const ssh::PublicKey& key);
  ~LaneKnownHosts();
  LaneKnownHosts(const LaneKnownHosts&) = delete;
  LaneKnownHosts& operator=(const LaneKnownHosts&) = delete;
  const std::filesystem::path& file() const { return file_; }
  const std::filesystem::path& dir() const { return dir_; }  // mode 0700: the tunnel master's socket lives here too

 private:
  explicit LaneKnownHosts(std::filesystem::path dir) : dir_(std::move(dir)), file_(dir_ / "known_hosts") {}
  std::filesystem::path dir_, file_;
};

// Starts `command` on the box through `ssh` and says hello to the agent it starts; null (and a
// debug line saying why) when ssh could not connect or the agent did not answer by `deadline`.
// The AgentLink owns the child: stopping the link ends ssh, and ssh's end the remote agent.
std::unique_ptr<AgentLink> open_openssh_lane(const OpenSshLaneSpec& spec, std::string_view key_type, const std::string& command,
                                             Clock::time_point deadline);

}  // namespace ferry::remote

// SshEndpoint: ferry-agent on a remote box, over an SSH exec channel. It resolves the host like
// ssh does, installs the agent when the box lacks this exact build (SFTP to a temp name, hash
// check, chmod, atomic rename), and keeps the link up: keepalives detect a dead or hung link,
// reconnects back off exponentially (capped, never giving up), idempotent calls in flight are
// retried on the new link and the rest fail saying why.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "helper/remote/agent_link.hpp"
#include "helper/remote/endpoint.hpp"
#include "helper/remote/loopback_listener.hpp"
#include "helper/remote/openssh_mux.hpp"
#include "helper/ssh/ssh_connection.hpp"
#include "protocol/link_state.hpp"

namespace ferry::remote {

// host/stateChanged's params; the state's word is spelled only at the wire (to_json, from_json).
struct HostState {
  protocol::LinkState state = protocol::LinkState::unknown;
  std::string host;
  int attempt = 0;              // reconnect attempt number (0 while connected)
  long long retry_in_ms = 0;    // when the next attempt starts ("reconnecting")
  std::string message;          // why the link dropped or the last attempt failed
};
json to_json(const HostState& state);
// A host/stateChanged's params back (missing fields stay empty, an unknown word is `unknown`).
HostState host_state_from_json(const json& params);

struct SshEndpointOptions {
  std::string host;                       // ssh config alias, or user@host:port
  std::optional<std::string> ssh_config;  // -F FILE / "sshConfig"; default ~/.ssh/config
  std::string remote_root;                // the agent's --root; may start with "~/"
  std::filesystem::path agent_binary;     // the x86-64 or aarch64 (this ferry's own arch) agent to install;
                                          // empty: find_agent_for_arch (the other arch's always comes from there)
  std::string agent_dir = "~/.cache/ferry/agent";  // <agent_dir>/<version>/ferry-agent-<arch>-<sha256[:16]> on the box
  std::vector<std::string> agent_args;
  ssh::SessionOptions session;
  // 0 = from the ssh config (ServerAliveInterval/CountMax), else 4 s x 3: a dead link is noticed
  // within about 13 s.
  std::chrono::milliseconds keepalive_interval{0};
  int keepalive_count_max = 0;
  bool reconnect = true;
  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{30'000};
  std::function<void(const HostState&)> on_state;  // called from ferry's threads, never under a lock
  // Which methods may be sent again after a reconnect; default: is_idempotent_method.
  std::function<bool(std::string_view)> idempotent;
  // Bulk lanes (Endpoint::bulk_lanes): -1 = FERRY_BULK_LANES if set, else kAutoBulkLanes when the
  // link's round trip is kBulkLaneMinRtt or more (a window-bound link) and none on a fast one.
  int bulk_lanes = -1;
  // Extra SSH connections the lanes are spread over (lane i on connection i % N; at most one per
  // lane): -1 = FERRY_BULK_CONNECTIONS if set, else kAutoBulkConnections. 0: every lane is a
  // channel of the link's own connection.
  int bulk_connections = -1;
  // Lanes through the OpenSSH client (openssh_lane.hpp) for a big file's bytes, whatever the round
  // trip, when an `ssh` client is found and the host is direct: -1 = FERRY_OPENSSH_LANES if set,
  // else kAutoOpenSshLanes on a short link; 0 = none. Unused when bulk_lanes is set.
  int openssh_lanes = -1;
  // Local tunnels through an OpenSSH ControlMaster (openssh_mux.hpp) instead of libssh2 channels:
  // -1 = FERRY_OPENSSH_TUNNELS if set, else on a short link (under kBulkLaneMinRtt, where CPU
  // per byte is the cap) when an `ssh` client is found and the host is direct; 0 = never;
  // 1 = whatever the round trip.
  int openssh_tunnels = -1;
  // What a local tunnel moves over the link's channels before that master starts
  // (kOpenSshTunnelAfterBytes: light tunnels keep to one login); 0: it starts with the first local
  // tunnel (`ferry tunnel`, ssh -L's stand-in, where every connection should be as fast as ssh -L's).
  std::uint64_t openssh_tunnel_after_bytes = kOpenSshTunnelAfterBytes;
  // Where the hosts' round trips are remembered (round_trip_memory.hpp); empty: the default file.
  std::filesystem::path round_trip_memory;
};

inline constexpr int kAutoBulkLanes = 8;
inline constexpr int kAutoBulkConnections = 4;
inline constexpr std::chrono::milliseconds kBulkLaneMinRtt{10};  // as ssh::kMinWindowRtt
// One: since frames write a chunk in place (no copy on the agent's side), a 1 GiB pull or push
// on 2 cores through one lane took 6-14 % less time and 6-17 % less CPU than through the link,
// in all 8 alternated pairs (bench/results/wan.md, session 14); two cost more CPU, no more speed.
// In session 13, before that change, one lane was no gain.
inline constexpr int kAutoOpenSshLanes = 1;

// How many bulk lanes a link gets, and of which kind: the rule alone, for SshEndpoint and its
// tests. `bulk_asked` (option or FERRY_BULK_LANES) wins outright with libssh2 lanes;
// `openssh_asked` (option or FERRY_OPENSSH_LANES) > 0 means OpenSSH lanes whatever the round
// trip; else a short link (under kBulkLaneMinRtt: CPU is the cap) gets `openssh_lanes` OpenSSH
// lanes (kAutoOpenSshLanes, 0 when no client is found or the host is not direct) and a long one
// window lanes by its round trip.
struct LanePlan {
  std::size_t lanes = 0;
  bool openssh = false;  // through the OpenSSH client, else libssh2 channels
};
LanePlan plan_lanes(std::chrono::steady_clock::duration rtt, std::optional<std::size_t> bulk_asked,
                    std::optional<std::size_t> openssh_asked, std::size_t openssh_lanes);

// Read-only methods (hello, ping, stat, list, read, status, signatures...) are safe to repeat.
bool is_idempotent_method(std::string_view method);

// What the install step found or did, for doctor and tests.
struct AgentInstallReport {
  std::string remote_path;  // ferry-agent on the box: absolute after an install, else as configured ("~/...")
  std::string remote_home;  // $HOME on the box (known after an install)
  bool installed = false;   // uploaded this time
  std::string sha256;
};

class SeverableStream;

class SshEndpoint final : public Endpoint {
 public:
  explicit SshEndpoint(SshEndpointOptions options);
  ~SshEndpoint() override;

  std::expected<AgentInfo, ResponseError> connect(std::chrono::milliseconds timeout = kDefaultHandshakeTimeout) override;
  std::expected<json, ResponseError> call(std::string_view method, json params,
                                          std::chrono::milliseconds timeout = kDefaultCallTimeout) override;
  std::expected<void, ResponseError> notify(std::string_view method, json params) override;
  const AgentInfo& info() const override { return info_; }
  bool connected() const override;
  bool reconnects() const override { return options_.reconnect; }
  void close() override;
  std::string description() const override;

  // Local tunnels keep their listener through an outage (connections wait in its backlog) and
  // forward again once the link is back; reverse tunnels are requested again on the new link.
  std::expected<ForwardInfo, ResponseError> open_forward(const ForwardSpec& spec) override;
  std::expected<void, ResponseError> close_forward(int id) override;
  std::vector<ForwardInfo> list_forwards() const override;

  // On a host remembered as far (its last link's round trip), opens the lane connections now,
  // beside the link's own handshake; bulk_lanes() takes them once they show the link's host key.
  void expect_bulk() override;
  std::size_t bulk_lanes() override;
  bool lanes_save_cpu() override;
  std::expected<json, ResponseError> call_lane(std::size_t lane, std::string_view method, json params,
                                               std::chrono::milliseconds timeout) override;
  // Whether this link's lanes were asked for; lanes up now, extra connections with a lane up
  // now, and calls the lanes answered (tests).
  bool lanes_asked() const { return current_lanes() != nullptr; }
  std::size_t live_lanes() const override;
  std::size_t live_lane_connections() const;
  std::uint64_t lane_calls() const { return lane_calls_.load(); }
  // Lane connections opened ahead of the link (expect_bulk) and then used by lanes (tests).
  std::size_t early_connections_used() const { return early_used_.load(); }

  // Runs a shell command on the box over the current connection (doctor, the trainer's install,
  // tests); `input` is its stdin.
  std::expected<ssh::ExecResult, ResponseError> exec(const std::string& command,
                                                    std::chrono::milliseconds timeout = std::chrono::seconds(30),
                                                    std::string input = {});
  // A shell command whose stdout is read as it comes (the trainer's build progress).
  std::expected<std::unique_ptr<ssh::SshStream>, ResponseError> open_stream(const std::string& command,
                                                                             std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // A second agent over this link's connection, started by the installed agent's `--job-link` with
  // `request` as its first stdin line (an agent inside a Slurm job: job_endpoint.hpp), handshaken.
  // The link does not reconnect: when the connection goes, so does it.
  std::expected<std::unique_ptr<AgentLink>, ResponseError> open_job_link(const json& request, Clock::time_point deadline,
                                                                         NotificationHandler on_notification, AgentInfo& info);
  // Whether local tunnels of this link go through the OpenSSH master, waiting up to `timeout`
  // for a master that is starting (tests, benchmarks); false when the link has none.
  bool wait_openssh_tunnels(std::chrono::milliseconds timeout);
  // Connections of the open local tunnels that the OpenSSH master carried (tests).
  std::uint64_t tunnel_connections_through_openssh() const;
  AgentInstallReport install_report() const;
  ssh::HostKeyInfo host_key() const;
  int reconnect_count() const { return reconnects_.load(); }

 private:
  struct Lanes;
  struct EarlyConnections;
  using LanePlan = remote::LanePlan;
  struct Link {
    std::unique_ptr<ssh::SshConnection> connection;
    std::unique_ptr<AgentLink> agent;
    std::string launch;  // the command that started `agent`: bulk lanes start theirs with it
    std::mutex lanes_mutex;
    std::shared_ptr<Lanes> lanes;  // once bulk_lanes() asked; destroyed before `connection`
    std::optional<LanePlan> plan;  // planned_lanes' answer, made once
    std::optional<std::shared_ptr<TunnelMaster>> tunnel_master;  // decided once (under lanes_mutex); null: none
    // open_job_link's streams (under lanes_mutex): severed before `connection` goes, so that a job
    // link left open past a reconnect or close() fails its calls instead of using a dead connection.
    std::vector<std::weak_ptr<SeverableStream>> job_links;
    ~Link();
  };
  struct Keepalive {
    std::chrono::milliseconds interval;
    int count_max;
  };
  Keepalive keepalive() const;  // from the options, else the ssh config, else 4 s x 3
  Keepalive keepalive_for(const ssh::HostConfig& host) const;
  std::optional<std::size_t> asked_bulk_lanes() const;  // the option, else FERRY_BULK_LANES
  LanePlan lane_plan(const Link& link, Clock::duration rtt) const;
  LanePlan planned_lanes(Link& link);  // lane_plan once per link (under lanes_mutex)
  std::optional<std::size_t> requested_openssh_lanes() const;  // the option, else FERRY_OPENSSH_LANES
  std::size_t wanted_openssh_lanes() const;
  std::size_t wanted_lane_connections(std::size_t lanes) const;
  std::unique_ptr<ssh::SshConnection> open_lane_connection(const ssh::HostConfig& host, ssh::SessionOptions so,
                                                           const std::string& fingerprint, Keepalive keepalive,
                                                           std::size_t slot) const;
  std::unique_ptr<AgentLink> open_lane_agent(ssh::SshConnection& conn, const std::string& launch, std::size_t lane) const;
  OpenSshLaneSpec openssh_spec(const std::filesystem::path& client, const std::filesystem::path& known_hosts) const;
  void start_openssh_lanes(Lanes& lanes, const Link& link) const;
  std::shared_ptr<TunnelMaster> tunnel_master(Link& link);  // started at the first local tunnel
  std::shared_ptr<Lanes> current_lanes() const;
  std::filesystem::path round_trip_file() const;
  void start_early_connections();  // under early_mutex_
  std::shared_ptr<EarlyConnections> take_early_connections();
  std::expected<std::shared_ptr<Link>, ResponseError> establish(Clock::time_point deadline);
  std::expected<void, ResponseError> load_local_agents();
  std::string agent_file_name(const std::string& arch) const;  // ferry-agent-<arch>-<first 16 hex digits of its sha256>
  std::string launch_command(const std::string& dir_display) const;
  std::expected<std::string, ResponseError> install_agent(ssh::SshConnection& c, const std::string& abs_dir,
                                                          const std::string& arch, Clock::time_point deadline);
  void emit(HostState state);
  void link_broken(const std::string& why);
  void monitor_loop();
  std::shared_ptr<Link> current() const;
  struct Forward {
    ForwardInfo info;
    LoopbackListener listener;  // local tunnels only
    ssh::ForwardHandle active;  // on `link`, while that link lives
    std::weak_ptr<Link> link;
  };
  // Starts `f` on `link`; false (with f.info.error set) when the link refused it.
  bool start_forward(Forward& f, const std::shared_ptr<Link>& link);
  void restore_forwards(const std::shared_ptr<Link>& link);

  SshEndpointOptions options_;
  ssh::HostConfig host_;
  AgentInfo info_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::shared_ptr<Link> link_;
  bool broken_ = false;
  bool closing_ = false;
  std::string broken_reason_;
  AgentInstallReport install_;
  ssh::HostKeyInfo host_key_;
  std::thread monitor_;
  std::atomic<int> reconnects_{0};
  std::atomic<std::uint64_t> lane_calls_{0};

  // Lane connections opened ahead of the link (expect_bulk), for this connect's first lanes.
  std::mutex early_mutex_;
  bool bulk_expected_ = false;
  bool early_taken_ = false;                       // bulk_lanes() came: nothing more opens early
  std::optional<ssh::HostConfig> early_host_;      // host_ as this connect resolved it
  std::shared_ptr<EarlyConnections> early_;
  std::atomic<std::size_t> early_used_{0};

  // Lock order: forwards_mutex_ before mutex_ (never the reverse); forward starts block on the
  // link's io thread, which takes neither.
  mutable std::mutex forwards_mutex_;
  std::map<int, Forward> forwards_;
  int next_forward_id_ = 1;

  // The local ferry-agent builds by architecture (agent_builds.hpp), each hashed once (again only
  // if its file changes); read whole only to upload. `agents_missing_`: why an arch has none.
  struct LocalAgent {
    std::filesystem::path path;
    std::filesystem::file_time_type mtime{};
    std::string hash;
  };
  std::map<std::string, LocalAgent> agents_;
  std::map<std::string, std::string> agents_missing_;
};

// What to do about a failed connect (SshEndpoint::connect's error, by its data.kind): "check the
// address/port, ...", "add your public key ...". Empty when the message already says it (an
// unknown or changed host key names `ferry trust`) or nothing specific is known.
std::string connect_next_step(const ResponseError& error);

// ferry doctor / doctor/run: one line per check, each pass, warn or fail with the fix.
struct DoctorCheck {
  std::string name;
  std::string status;  // "pass", "warn", "fail"
  std::string detail;
  std::string fix;     // empty on pass
};
json to_json(const DoctorCheck& check);

struct DoctorOptions {
  SshEndpointOptions endpoint;      // reconnect is turned off for the run
  std::string interpreter = "python3";
  std::chrono::milliseconds timeout{30'000};
  // Checks of layers above this one (the trainer on the box), run on the connected endpoint last.
  std::function<std::vector<DoctorCheck>(SshEndpoint& endpoint)> extra_checks;
};

// Connects (installing the agent if needed) and checks the link, the host key, the agent, the box
// (OS, arch, glibc, free disk at the root), NVIDIA driver and GPUs, CUDA, python and torch, and SSH
// hardening. A connection failure ends the list with that failure and its fix.
std::vector<DoctorCheck> run_doctor(DoctorOptions options);

}  // namespace ferry::remote

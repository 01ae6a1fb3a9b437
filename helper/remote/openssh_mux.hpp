// Tunnels through the OpenSSH client on a short link. libssh2 1.10 spends 1.4-1.8x ssh's CPU per
// tunnelled byte (bench/results/tunnel.md), which caps a -L tunnel at ~0.8x ssh -L wherever the
// CPU is the limit. So on a link under kBulkLaneMinRtt ferry starts one `ssh` as a ControlMaster
// (the lanes' options: the link's host key only, no prompt, no ssh config) and hands each accepted
// tunnel connection to it as a stdio forward (OpenSSH's PROTOCOL.mux, MUX_C_NEW_STDIO_FWD): the
// master reads the socket itself, so an upload never passes through ferry, and writes the
// download into a pipe that ferry splices into the socket (mux_tunnel.hpp). On a long link the
// libssh2 path stays: its receive window follows the link, ssh's stays 2 MiB.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/unique_fd.hpp"
#include "helper/remote/child_process.hpp"
#include "helper/remote/openssh_lane.hpp"

namespace ferry::remote {

// The few mux messages ferry speaks (pure, for tests): each packet is a uint32 length, then the
// body (a uint32 type first), in SSH wire format.
namespace mux {
inline constexpr std::uint32_t kVersion = 4;
inline constexpr std::uint32_t kHello = 0x00000001;
inline constexpr std::uint32_t kNewStdioForward = 0x10000008;
inline constexpr std::uint32_t kPermissionDenied = 0x80000002;
inline constexpr std::uint32_t kFailure = 0x80000003;
inline constexpr std::uint32_t kSessionOpened = 0x80000006;
inline constexpr std::size_t kMaxPacket = 256 << 10;

std::string hello_packet();
std::string stdio_forward_packet(std::uint32_t request_id, std::string_view host, std::uint32_t port);

// One message from the master: its hello (`id` = its version), SESSION_OPENED (`id` = our
// request id), or a refusal with its reason.
struct Message {
  std::uint32_t type = 0;
  std::uint32_t id = 0;
  std::string reason;
};
// The first whole packet of `buffer`, taken off it; nullopt while it is incomplete; an error for
// a packet no master sends (too long, or too short for its type).
std::expected<std::optional<Message>, std::string> take_message(std::string& buffer);
}  // namespace mux

// ssh's argv for a master on `control_path` that prints kMuxReadyLine once it listens there.
inline constexpr std::string_view kMuxReadyLine = "ferry-mux-ready";
std::vector<std::string> openssh_mux_argv(const OpenSshLaneSpec& spec, std::string_view key_type,
                                          const std::filesystem::path& control_path);

// A running master. Its control socket lives in a 0700 directory of ferry's (LaneKnownHosts'),
// so only this user can use the connection it holds.
class OpenSshMux {
 public:
  // Null (and a debug line saying why) when ssh did not log in and listen by `deadline`, or
  // `cancel_fd` (when given) became readable first.
  static std::unique_ptr<OpenSshMux> start(const OpenSshLaneSpec& spec, std::string_view key_type,
                                           std::filesystem::path control_path, Clock::time_point deadline, int cancel_fd = -1);
  ~OpenSshMux();  // ends the master, and with it every session it carries
  OpenSshMux(const OpenSshMux&) = delete;
  OpenSshMux& operator=(const OpenSshMux&) = delete;

  // Asks the master to carry host:port (as the box sees it) with `read_fd` as what it reads and
  // `write_fd` as where it writes (both sent, not closed). The control socket comes back,
  // non-blocking: the master's hello and its answer arrive there, then EOF when the session
  // ends; closing it first ends the session.
  std::expected<posix::UniqueFd, std::string> stdio_forward(int read_fd, int write_fd, std::string_view host, int port);
  bool running();
  pid_t pid() const { return child_->pid(); }

 private:
  OpenSshMux(std::unique_ptr<ChildProcess> child, ChildProcess::Spawned fds, std::filesystem::path control_path);
  std::unique_ptr<ChildProcess> child_;
  posix::UniqueFd stdin_, stdout_;
  std::filesystem::path control_path_;
  std::mutex mutex_;
  std::uint32_t next_id_ = 1;
};

// A tunnel's connections go over libssh2 channels until they have moved this much (64 MiB, about
// a quarter of a second of ssh -L here): only then is a second login worth its cost (~0.3
// core-seconds, and a touch for a hardware key), so a debugger's or a notebook's tunnel keeps to
// the one login of the link. `ferry tunnel` sets 0 (SshEndpointOptions::openssh_tunnel_after_bytes).
inline constexpr std::uint64_t kOpenSshTunnelAfterBytes = 64ull << 20;

// One link's master, started in the background when a tunnel of the link has carried bulk
// (mux_tunnel.hpp), or with the tunnel where the threshold is 0, so that opening a tunnel in the
// IDE never waits for a second login and a light one (a debugger's) never costs one; until it is
// up (or if it never comes up) tunnels use libssh2.
class TunnelMaster {
 public:
  TunnelMaster(OpenSshLaneSpec spec, std::string key_type, std::unique_ptr<LaneKnownHosts> dir);
  void start();  // once; later calls do nothing
  ~TunnelMaster();
  TunnelMaster(const TunnelMaster&) = delete;
  TunnelMaster& operator=(const TunnelMaster&) = delete;
  // The master while it runs; null while it starts, if it did not start, or once it died.
  std::shared_ptr<OpenSshMux> mux();
  // Starts it if need be and waits until the start settled; whether the master is up (tests,
  // benchmarks).
  bool wait_up(Clock::time_point deadline);

 private:
  OpenSshLaneSpec spec_;
  std::string key_type_;
  std::unique_ptr<LaneKnownHosts> dir_;
  std::mutex mutex_;
  std::condition_variable settled_cv_;
  bool settled_ = false;
  std::shared_ptr<OpenSshMux> mux_;
  posix::UniqueFd cancel_read_, cancel_write_;  // the destructor ends a start still waiting for ssh
  std::thread starter_;
};

}  // namespace ferry::remote

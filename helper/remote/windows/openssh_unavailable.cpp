// The OpenSSH client's transports on Windows: none yet. Windows' OpenSSH has no ControlMaster (no
// tunnel master to hand connections to), and a lane's pipes would need a stream over HANDLEs;
// openssh_lane_unsupported says so for every host, so SshEndpoint never asks for either and its
// libssh2 link carries everything. The definitions below are what the shared code links against.
#include "helper/remote/mux_tunnel.hpp"
#include "helper/remote/openssh_lane.hpp"
#include "helper/remote/openssh_mux.hpp"

namespace ferry::remote {

std::string openssh_transports_unavailable() {
  return "ferry on Windows carries everything on its own SSH link (no OpenSSH lanes or tunnel master)";
}

std::unique_ptr<LaneKnownHosts> LaneKnownHosts::create(const ssh::PublicKey&) { return nullptr; }
LaneKnownHosts::~LaneKnownHosts() = default;

std::unique_ptr<AgentLink> open_openssh_lane(const OpenSshLaneSpec&, std::string_view, const std::string&, Clock::time_point) {
  return nullptr;
}

std::unique_ptr<OpenSshMux> OpenSshMux::start(const OpenSshLaneSpec&, std::string_view, std::filesystem::path, Clock::time_point,
                                              int) {
  return nullptr;
}
OpenSshMux::~OpenSshMux() = default;
bool OpenSshMux::running() { return false; }
std::expected<posix::UniqueFd, std::string> OpenSshMux::stdio_forward(int, int, std::string_view, int) {
  return std::unexpected(openssh_transports_unavailable());
}

TunnelMaster::TunnelMaster(OpenSshLaneSpec spec, std::string key_type, std::unique_ptr<LaneKnownHosts> dir)
    : spec_(std::move(spec)), key_type_(std::move(key_type)), dir_(std::move(dir)) {}
void TunnelMaster::start() {}
TunnelMaster::~TunnelMaster() = default;
std::shared_ptr<OpenSshMux> TunnelMaster::mux() { return nullptr; }
bool TunnelMaster::wait_up(Clock::time_point) { return false; }

struct MuxTunnel::Conn {};

MuxTunnel::MuxTunnel(std::shared_ptr<TunnelMaster> master, std::string host, int port, std::uint64_t after_bytes)
    : master_(std::move(master)), host_(std::move(host)), port_(port), after_bytes_(after_bytes) {}
MuxTunnel::~MuxTunnel() = default;
bool MuxTunnel::take(net::NativeSocket, const std::shared_ptr<ssh::ForwardCounters>&) { return false; }
void MuxTunnel::stop() {}

}  // namespace ferry::remote

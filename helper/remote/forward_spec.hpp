// Tunnel specs as ssh spells them (`8888`, `9000:localhost:8888`, `127.0.0.1:9000:localhost:8888`)
// and what an open tunnel reports. Pure: parsing and wording only, no sockets.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

#include "helper/deploy/project_config.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/link_state.hpp"
#include "protocol/messages_tunnel.hpp"

namespace ferry::remote {

enum class ForwardKind { kLocal, kReverse };

// kLocal (ssh -L): bind_address:local_port here -> remote_host:remote_port as the host sees it.
// kReverse (ssh -R): the host's bind_address:remote_port -> local_host:local_port here.
// The listening side always binds to loopback.
struct ForwardSpec {
  ForwardKind kind = ForwardKind::kLocal;
  std::string name;                       // optional label (ferry.json tunnels[].name)
  std::string bind_address = "127.0.0.1";  // 127.0.0.1, localhost or ::1
  int local_port = 0;                      // kLocal: 0 = an ephemeral port, reported once bound
  std::string remote_host = "localhost";   // kLocal only
  int remote_port = 0;                     // kReverse: 0 = the host picks
  std::string local_host = "127.0.0.1";    // kReverse only
};

// An open tunnel.
struct ForwardInfo {
  int id = 0;
  ForwardSpec spec;
  int bound_port = 0;          // the port that listens: here (kLocal) or on the host (kReverse)
  protocol::ForwardState state = protocol::ForwardState::waiting;
  std::string error;           // why the last restore failed, if it did
  std::uint64_t accepted = 0;  // connections so far
  std::uint64_t live = 0;      // connections open now
};

// `text` as ssh's -L / -R argument: PORT, LPORT:HOST:RPORT or ADDR:LPORT:HOST:RPORT (for -R the
// first port is the host's). IPv6 addresses go in brackets ([::1]:9000:localhost:8888). A
// non-loopback ADDR is refused with the reason.
std::expected<ForwardSpec, std::string> parse_forward_spec(std::string_view text, ForwardKind kind);

// Checks a spec built elsewhere (ferry.json, tunnel/open): loopback bind address, port ranges.
std::expected<void, std::string> validate_forward_spec(const ForwardSpec& spec);

ForwardSpec forward_spec_from(const deploy::TunnelSpec& tunnel);

bool is_loopback_address(std::string_view address);

// "127.0.0.1:9000 → remote localhost:8888" / "remote 127.0.0.1:5678 → 127.0.0.1:5678 here".
std::string describe(const ForwardInfo& info);

// tunnel/open's params and tunnel/list's entries (protocol/spec/protocol.md).
// The IDE wire's view of a tunnel (tunnel/open, tunnel/list); to_json is its JSON.
protocol::TunnelInfo tunnel_info(const ForwardInfo& info);
protocol::json to_json(const ForwardInfo& info);
std::expected<ForwardSpec, std::string> forward_spec_from_json(const protocol::json& params);
// The inverse: a spec as forward_spec_from_json reads it (a riding command asks its live ferry).
protocol::json forward_spec_json(const ForwardSpec& spec);

}  // namespace ferry::remote

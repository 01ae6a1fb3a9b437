// Typed params and results of the IDE's tunnel/* methods (tunnel/open, tunnel/close,
// tunnel/list) and debug/prepare, which opens one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/json_reader.hpp"

namespace ferry::protocol {

using json = nlohmann::json;

namespace method {
inline constexpr std::string_view kTunnelOpen = "tunnel/open";
inline constexpr std::string_view kTunnelClose = "tunnel/close";
inline constexpr std::string_view kTunnelList = "tunnel/list";
inline constexpr std::string_view kDebugPrepare = "debug/prepare";
}  // namespace method

// tunnel/open's params pass through whole: helper/remote's forward_spec_from_json checks them
// with tunnel-specific messages (the same ones ferry.json's tunnels get).
struct TunnelOpenParams {
  json raw;
};
std::optional<DecodeError> from_json(const json& j, TunnelOpenParams& out, const std::string& ptr = "");

struct TunnelCloseParams {
  int id = 0;
};
std::optional<DecodeError> from_json(const json& j, TunnelCloseParams& out, const std::string& ptr = "");

struct TunnelListParams {};
std::optional<DecodeError> from_json(const json& j, TunnelListParams& out, const std::string& ptr = "");

// One open tunnel: tunnel/open's result, an entry of tunnel/list.
struct TunnelInfo {
  int id = 0;
  bool local = true;  // "local" (-L) or "reverse" (-R)
  std::string name;   // absent when empty
  std::string bind_address;
  int local_port = 0;
  int remote_port = 0;
  std::string remote_host;  // local tunnels
  std::string local_host;   // reverse tunnels
  std::string state;        // "active", "waiting"
  std::string error;        // absent when empty
  std::uint64_t accepted = 0;
  std::uint64_t live = 0;
  std::string description;
};
json to_json(const TunnelInfo& t);

struct TunnelCloseResult {
  int closed = 0;
};
json to_json(const TunnelCloseResult& r);

struct TunnelListResult {
  std::vector<TunnelInfo> tunnels;
};
json to_json(const TunnelListResult& r);

inline constexpr int kDefaultDebugpyPort = 5678;

struct DebugPrepareParams {
  std::optional<std::string> path;     // the project, as for project/load
  std::vector<std::string> command;    // script and args, or -m MODULE ...
  int port = kDefaultDebugpyPort;      // debugpy's port on the box
  std::optional<int> local_port;       // the tunnel's port here; default `port`, 0 any
  std::map<std::string, std::string> env;
  std::string cwd;
  bool legacy_type = false;
  bool just_my_code = true;
  int wait = 30;
};
std::optional<DecodeError> from_json(const json& j, DebugPrepareParams& out, const std::string& ptr = "");

struct DebugPrepareResult {
  json configuration;  // a VS Code attach configuration, ready to use
  std::string run_id;
  int local_port = 0;
};
json to_json(const DebugPrepareResult& r);

}  // namespace ferry::protocol

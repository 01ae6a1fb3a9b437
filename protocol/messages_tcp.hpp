// Typed params of the agent's tcp/* methods: TCP connections opened by the agent where it runs and
// carried over the agent wire (a tunnel to a Slurm job's compute node, which has no sshd). The
// helper asks tcp/connect; after that both ends send tcp/data, tcp/ack and tcp/eof notifications
// for the connection (common/socket_pump.hpp is the flow control), and the helper's tcp/close ends
// it. See "The agent wire" in protocol/spec/protocol.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/json_reader.hpp"

namespace ferry::protocol {

using json = nlohmann::json;

namespace method {
inline constexpr std::string_view kTcpConnect = "tcp/connect";
inline constexpr std::string_view kTcpData = "tcp/data";
inline constexpr std::string_view kTcpAck = "tcp/ack";
inline constexpr std::string_view kTcpEof = "tcp/eof";
inline constexpr std::string_view kTcpClose = "tcp/close";
inline constexpr std::string_view kTcpListen = "tcp/listen";
inline constexpr std::string_view kTcpAccepted = "tcp/accepted";
inline constexpr std::string_view kTcpUnlisten = "tcp/unlisten";
}  // namespace method

// {host, port}: host is an address (the agent is static: no name lookups) or "localhost".
struct TcpConnectParams {
  std::string host = "127.0.0.1";
  int port = 0;
};
std::optional<DecodeError> from_json(const json& j, TcpConnectParams& out, const std::string& ptr = "");
json to_json(const TcpConnectParams& p);

struct TcpConnectResult {
  std::int64_t id = 0;
};
json to_json(const TcpConnectResult& r);
std::optional<DecodeError> from_json(const json& j, TcpConnectResult& out, const std::string& ptr = "");

// tcp/listen {host?, port}: the agent listens on its loopback (a reverse tunnel; port 0: any free
// one) -> {listenerId, port}. Each connection it accepts is told as tcp/accepted {listenerId, id},
// then carried as a tcp/connect's is; tcp/unlisten {listenerId} stops listening.
struct TcpListenParams {
  std::string host = "127.0.0.1";  // 127.0.0.1, localhost or ::1: nothing beyond the node's loopback
  int port = 0;
};
std::optional<DecodeError> from_json(const json& j, TcpListenParams& out, const std::string& ptr = "");
json to_json(const TcpListenParams& p);
struct TcpListenResult {
  std::int64_t listener_id = 0;
  int port = 0;
};
json to_json(const TcpListenResult& r);
std::optional<DecodeError> from_json(const json& j, TcpListenResult& out, const std::string& ptr = "");
struct TcpAcceptedParams {
  std::int64_t listener_id = 0;
  std::int64_t id = 0;
};
json to_json(const TcpAcceptedParams& p);
std::optional<DecodeError> from_json(const json& j, TcpAcceptedParams& out, const std::string& ptr = "");
struct TcpUnlistenParams {
  std::int64_t listener_id = 0;
};
json to_json(const TcpUnlistenParams& p);
std::optional<DecodeError> from_json(const json& j, TcpUnlistenParams& out, const std::string& ptr = "");

// tcp/data {id, data: bytes}.
struct TcpDataParams {
  std::int64_t id = 0;
  std::vector<std::uint8_t> data;
};
std::optional<DecodeError> from_json(const json& j, TcpDataParams& out, const std::string& ptr = "");
json tcp_data_params(std::int64_t id, const std::uint8_t* data, std::size_t size);

// tcp/ack {id, bytes}: this many more of the peer's bytes are written to the socket.
struct TcpAckParams {
  std::int64_t id = 0;
  std::int64_t bytes = 0;
};
std::optional<DecodeError> from_json(const json& j, TcpAckParams& out, const std::string& ptr = "");
json to_json(const TcpAckParams& p);

// tcp/eof and tcp/close: {id}.
struct TcpIdParams {
  std::int64_t id = 0;
};
std::optional<DecodeError> from_json(const json& j, TcpIdParams& out, const std::string& ptr = "");
json to_json(const TcpIdParams& p);

}  // namespace ferry::protocol

// Typed params and results of the agent's own methods on the helper <-> agent wire: agent/hello
// (the version handshake), agent/ping, fs/stat and agent/shutdown (which takes EmptyParams and
// answers EmptyResult, messages.hpp). See "The agent wire" in protocol/spec/protocol.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/json_reader.hpp"

namespace ferry::protocol {

using json = nlohmann::json;

namespace method {
inline constexpr std::string_view kAgentHello = "agent/hello";
inline constexpr std::string_view kAgentPing = "agent/ping";
inline constexpr std::string_view kAgentShutdown = "agent/shutdown";
inline constexpr std::string_view kFsStat = "fs/stat";
}  // namespace method

// Upper bound on agent/ping's delayMs, so a peer cannot park the agent for long.
inline constexpr std::int64_t kMaxAgentPingDelayMs = 60'000;

struct AgentHelloParams {
  int protocol_version = 0;
  std::optional<std::string> helper_version;
};
std::optional<DecodeError> from_json(const json& j, AgentHelloParams& out, const std::string& ptr = "");

struct AgentHelloResult {
  int protocol_version = 0;
  std::string version;
  std::int64_t pid = 0;
  std::string root;
  std::string os, arch, hostname;
};
json to_json(const AgentHelloResult& r);

// {echo?: any, delayMs?: 0..kMaxAgentPingDelayMs}: the agent sleeps delayMs before answering
// (a latency probe), and echoes `echo` back as it came (binary too).
struct AgentPingParams {
  std::optional<json> echo;
  std::int64_t delay_ms = 0;
};
std::optional<DecodeError> from_json(const json& j, AgentPingParams& out, const std::string& ptr = "");

struct AgentPingResult {
  std::optional<json> echo;
};
json to_json(const AgentPingResult& r);

// {path}: relative to the agent's root.
struct FsStatParams {
  std::string path;
};
std::optional<DecodeError> from_json(const json& j, FsStatParams& out, const std::string& ptr = "");

// {exists, path} and, when it exists, {type: file|dir|symlink|other, size, mtimeNs, mode}.
struct FsStatResult {
  bool exists = false;
  std::string path;
  std::string type;
  std::int64_t size = 0;
  std::int64_t mtime_ns = 0;
  unsigned mode = 0;
};
json to_json(const FsStatResult& r);

}  // namespace ferry::protocol

// The client end of a project socket (project_socket.hpp): framed JSON-RPC requests to the
// project's live ferry process, one at a time, with their $/progress and cancellation. The CLI's
// LiveServer rides an editor's server or a daemon through it; an editor's server uses it to ask
// a daemon to hand the project over (ferry/stop).
#pragma once

#include <chrono>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/framing.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::server {

class SocketClient {
 public:
  // Connected to the live process of the project rooted at `root` (canonical); nullptr when none
  // listens (or on Windows, which has no project socket yet).
  static std::unique_ptr<SocketClient> connect(const std::filesystem::path& root);
  ~SocketClient();
  SocketClient(const SocketClient&) = delete;
  SocketClient& operator=(const SocketClient&) = delete;

  // A request and its answer; the $/progress values of its work go to `progress`, and once
  // `cancelled` says so, $/cancelRequest goes out (the answer then says cancelled). Without an
  // answer within `limit` (none: wait as long as the process lives) the call fails.
  std::expected<nlohmann::json, protocol::ResponseError> call(const std::string& method, nlohmann::json params,
                                                              const std::function<void(const nlohmann::json&)>& progress = {},
                                                              const std::function<bool()>& cancelled = {},
                                                              std::optional<std::chrono::milliseconds> limit = std::nullopt);

 private:
  explicit SocketClient(int fd) : fd_(fd) {}
  std::optional<nlohmann::json> next_message(int timeout_ms);

  int fd_;
  protocol::FrameDecoder decoder_;
  int next_id_ = 1;
};

}  // namespace ferry::server

// A terminal's command answered by the project's live `ferry serve` (the editor's) through the
// project socket (helper/server/project_socket.hpp): no SSH login of its own, and the server's
// warm file index. Only where that server is of this very build and linked to the project now;
// anywhere else (none, another build, not linked, FERRY_NO_DAEMON=1) the command makes its own
// link as before.
#pragma once

#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "helper/deploy/project_config.hpp"
#include "protocol/framing.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::cli {

class LiveServer {
 public:
  static std::unique_ptr<LiveServer> find(const deploy::ProjectConfig& project);
  ~LiveServer();
  LiveServer(const LiveServer&) = delete;
  LiveServer& operator=(const LiveServer&) = delete;

  // A request and its answer; the $/progress values of its work are given to `progress`, and
  // once `cancelled` says so, $/cancelRequest goes out (the answer then says cancelled).
  std::expected<nlohmann::json, protocol::ResponseError> call(const std::string& method, nlohmann::json params,
                                                              const std::function<void(const nlohmann::json&)>& progress = {},
                                                              const std::function<bool()>& cancelled = {});
  // The server's link, as host/connect describes it ("ssh u@h:22 (alias)"), and its pid.
  const std::string& endpoint() const { return endpoint_; }
  long long pid() const { return pid_; }

 private:
  explicit LiveServer(int fd) : fd_(fd) {}
  std::optional<nlohmann::json> next_message(int timeout_ms);

  int fd_;
  protocol::FrameDecoder decoder_;
  int next_id_ = 1;
  std::string endpoint_;
  long long pid_ = 0;
};

}  // namespace ferry::cli

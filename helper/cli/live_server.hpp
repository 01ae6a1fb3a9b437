// A terminal's command answered by the project's live ferry process through the project socket
// (helper/server/project_socket.hpp): the editor's `ferry serve`, or the daemon an earlier
// command left (helper/server/daemon.hpp). No SSH login of its own, and that process's warm file
// index. Only where that process is of this very build and linked to the project now; anywhere
// else (none, another build, not linked, FERRY_NO_DAEMON=1) the command makes its own link as
// before.
#pragma once

#include <expected>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "helper/deploy/project_config.hpp"
#include "helper/server/socket_client.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::cli {

// `--no-daemon`, or FERRY_NO_DAEMON set (not "0"): every command goes its own way and starts no
// daemon.
bool daemons_off();
void turn_daemons_off();  // --no-daemon

class LiveServer {
 public:
  static std::unique_ptr<LiveServer> find(const deploy::ProjectConfig& project);

  std::expected<nlohmann::json, protocol::ResponseError> call(const std::string& method, nlohmann::json params,
                                                              const std::function<void(const nlohmann::json&)>& progress = {},
                                                              const std::function<bool()>& cancelled = {}) {
    return client_->call(method, std::move(params), progress, cancelled);
  }
  // The server's link, as host/connect describes it ("ssh u@h:22 (alias)"), and its pid.
  const std::string& endpoint() const { return endpoint_; }
  long long pid() const { return pid_; }
  // All ferry/hello said (mappingRoot, agent, ...).
  const nlohmann::json& hello() const { return hello_; }
  // The connection itself: its notifications and its end.
  server::SocketClient& client() { return *client_; }

 private:
  explicit LiveServer(std::unique_ptr<server::SocketClient> client) : client_(std::move(client)) {}

  std::unique_ptr<server::SocketClient> client_;
  std::string endpoint_;
  long long pid_ = 0;
  nlohmann::json hello_;
};

}  // namespace ferry::cli

// The client end of a project socket (project_socket.hpp): framed JSON-RPC requests to the
// project's live ferry process, from any thread, with their $/progress and cancellation, and the
// notifications it sends (a riding run's output). A thread of its own reads the socket, so
// notifications arrive while no call is waiting. The CLI's LiveServer rides an editor's server or
// a daemon through it; an editor's server uses it to ask a daemon to hand the project over
// (ferry/stop).
#pragma once

#include <chrono>
#include <condition_variable>
#include <expected>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "protocol/framing.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::server {

class SocketClient {
 public:
  // Connected to the live process of the project rooted at `root` (canonical); nullptr when none
  // listens (or on Windows, which has no project socket yet).
  static std::unique_ptr<SocketClient> connect(const std::filesystem::path& root);
  ~SocketClient();  // closes the connection: the live process ends what this command left there
  SocketClient(const SocketClient&) = delete;
  SocketClient& operator=(const SocketClient&) = delete;

  // A request and its answer; the $/progress values of its work go to `progress`, and once
  // `cancelled` says so, $/cancelRequest goes out (the answer then says cancelled). Without an
  // answer within `limit` (none: wait as long as the process lives) the call fails.
  std::expected<nlohmann::json, protocol::ResponseError> call(const std::string& method, nlohmann::json params,
                                                              const std::function<void(const nlohmann::json&)>& progress = {},
                                                              const std::function<bool()>& cancelled = {},
                                                              std::optional<std::chrono::milliseconds> limit = std::nullopt);

  // The live process's notifications (not $/progress), on the reader thread; `closed` once, on
  // the reader thread too, when the connection ends (the process went away). Set before the
  // calls that cause notifications.
  void on_notification(std::function<void(const std::string& method, const nlohmann::json& params)> handler);
  void on_closed(std::function<void(const std::string& why)> handler);
  bool closed() const;

 private:
  struct Waiting {
    std::function<void(const nlohmann::json&)> progress;
    std::string token;
    std::optional<nlohmann::json> reply;  // the whole response
  };
  explicit SocketClient(int fd);
  void read_loop();
  void dispatch(const nlohmann::json& message);
  bool send(const nlohmann::json& message);

  int fd_;
  int wake_[2] = {-1, -1};  // a byte here ends read_loop
  std::mutex write_mutex_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::map<int, Waiting*> waiting_;
  std::optional<std::string> closed_;  // why the connection ended
  int next_id_ = 1;
  std::function<void(const std::string&, const nlohmann::json&)> notification_;
  std::function<void(const std::string&)> closed_handler_;
  std::thread reader_;
};

}  // namespace ferry::server

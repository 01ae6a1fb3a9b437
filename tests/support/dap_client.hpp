// A small Debug Adapter Protocol client for tests: it speaks to a real debug adapter (debugpy)
// over TCP with the LSP-style Content-Length framing the DAP shares with ferry's IDE wire.
// Single-threaded: every wait reads the socket until what was asked for arrives or a deadline
// passes; events that arrive meanwhile are queued for wait_event(). FERRY_DAP_TRACE=1 in the
// environment prints every message received to stderr.
#pragma once

#include <chrono>
#include <deque>
#include <expected>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/framing.hpp"

namespace ferry::test {

using nlohmann::json;

class DapClient {
 public:
  DapClient() = default;
  ~DapClient();
  DapClient(DapClient&& other) noexcept;
  DapClient& operator=(DapClient&& other) noexcept;
  DapClient(const DapClient&) = delete;
  DapClient& operator=(const DapClient&) = delete;

  // Connects to 127.0.0.1:port and sends `initialize`, retrying until `timeout` while the port
  // refuses or the peer closes before answering (what a tunnel does while the far end is not
  // listening yet). Returns the client with initialize's response body (the capabilities).
  static std::expected<DapClient, std::string> connect_and_initialize(int port, std::chrono::milliseconds timeout);

  // Sends a request and returns its seq; the response is collected by wait_response.
  int send_request(std::string_view command, const json& arguments = json::object());
  // The response to `seq`: its body (or {}), or an error naming the command and the adapter's
  // message when success is false, the peer closes, or the timeout passes.
  std::expected<json, std::string> wait_response(int seq, std::chrono::milliseconds timeout);
  // send_request + wait_response.
  std::expected<json, std::string> request(std::string_view command, const json& arguments = json::object(),
                                           std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // The next event named `event` (earlier events of other names stay queued); its body.
  std::expected<json, std::string> wait_event(std::string_view event, std::chrono::milliseconds timeout);
  // Everything received so far, for failure messages.
  const std::string& transcript() const { return transcript_; }

  bool connected() const { return fd_ >= 0; }
  void close();

 private:
  explicit DapClient(int fd) : fd_(fd) {}
  // Reads one more message into responses_/events_, or fails at EOF or the deadline.
  std::expected<void, std::string> pump(std::chrono::steady_clock::time_point deadline);
  std::expected<void, std::string> write_all(std::string_view bytes);

  int fd_ = -1;
  int next_seq_ = 1;
  protocol::FrameDecoder decoder_;
  std::deque<json> responses_;
  std::deque<json> events_;
  std::string transcript_;
};

}  // namespace ferry::test

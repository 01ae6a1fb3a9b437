// `ferry serve` as a real process over pipes, for tests of the binary itself (its flags, its
// exit): framed JSON-RPC requests in, responses read back by id with a deadline (notifications
// and server requests in between are skipped). Every message read is held to
// protocol/spec/ide-wire.schema.json (wire_schema.hpp; a misfit throws). Header-only; link
// ferry_remote and ferry_protocol.
#pragma once

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "helper/remote/child_process.hpp"
#include "protocol/framing.hpp"
#include "tests/support/wire_schema.hpp"

namespace ferry::test {

struct ServeProcess {
  using json = nlohmann::json;
  remote::ChildProcess child;
  int in = -1, out = -1;
  protocol::FrameDecoder decoder;
  std::map<std::string, std::pair<std::string, std::string>> asked;  // id -> method, command

  // `ferry ARGS...` (ARGS ends with "serve" and whatever follows it).
  explicit ServeProcess(const std::vector<std::string>& argv) {
    auto spawned = child.spawn(argv);
    if (!spawned) throw std::runtime_error("cannot start ferry serve: " + spawned.error());
    in = spawned->stdin_fd;
    out = spawned->stdout_fd;
  }
  ~ServeProcess() {
    if (in >= 0) ::close(in);
    if (out >= 0) ::close(out);
  }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  bool send(const json& message) {
    if (message.contains("id") && message.contains("method")) {
      const json params = message.value("params", json::object());
      const bool is_command = message["method"] == "workspace/executeCommand" && params.is_object() && params.contains("command");
      const std::string command = is_command ? params["command"].get<std::string>() : "";
      asked[message["id"].dump()] = {message["method"].get<std::string>(), command};
    }
    const auto bytes = protocol::encode_frame(message.dump());
    return ::write(in, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  }
  std::optional<json> response(int id, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      while (auto frame = decoder.next()) {
        if (!*frame) return std::nullopt;
        auto message = json::parse(**frame, nullptr, false);
        held_to_schema(message);
        if (message.is_object() && message.contains("id") && message["id"] == id && !message.contains("method"))
          return message;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) return std::nullopt;
      pollfd p{out, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char buffer[8192];
      ssize_t n = ::read(out, buffer, sizeof buffer);
      if (n <= 0) return std::nullopt;
      decoder.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    }
  }
  void held_to_schema(const json& m) {
    if (!m.is_object()) return;
    std::pair<std::string, std::string> what;
    if (!m.contains("method") && m.contains("id"))
      if (auto it = asked.find(m["id"].dump()); it != asked.end()) what = it->second;
    WireSchema::instance().check_message(m, what.first, what.second);
  }
  // A request and its response.
  std::optional<json> call(int id, const std::string& method, json params, std::chrono::milliseconds timeout) {
    if (!send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}})) return std::nullopt;
    return response(id, timeout);
  }
};

}  // namespace ferry::test

// An IDE stand-in for tests: runs ferry's JSON-RPC Server on a thread over two pipes and speaks
// to it frame by frame: requests (with their ids kept, so they can be cancelled), answers to the
// server's own requests, notifications kept for inspection. Every wait has a deadline.
// Every message read is held to protocol/spec/ide-wire.schema.json (wire_schema.hpp): a misfit
// throws, failing the test that saw it. Header-only; link ferry_server.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "helper/server/server.hpp"
#include "protocol/framing.hpp"
#include "tests/support/wire_schema.hpp"

namespace ferry::test {

class ServeClient {
 public:
  using json = nlohmann::json;
  using Clock = std::chrono::steady_clock;
  // The response object's body for a server -> client request: {"result": ...} or {"error": ...}.
  using Answer = std::function<json(const json& request)>;

  // A ferry-aware client: ferry's own requests and notifications, not LSP's fallbacks.
  static json ferry_capabilities() { return {{"experimental", {{"ferry", true}}}}; }

  // `capabilities`: initialize's; `root_uri` sent as rootUri (and no --project) when given.
  explicit ServeClient(const std::filesystem::path& project_dir, json capabilities = ferry_capabilities(),
                       std::optional<std::string> root_uri = std::nullopt) {
    int a[2], b[2];
    if (::pipe2(a, O_CLOEXEC) != 0 || ::pipe2(b, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    to_server_ = a[1];
    from_server_ = b[0];
    server::ServerOptions o;
    o.cwd = project_dir;
    if (!root_uri) o.project_dir = project_dir;
    server_ = std::thread([o, in = a[0], out = b[1]] {
      server::Server s(o);
      s.run(in, out);
      ::close(in);
      ::close(out);
    });
    json params{{"capabilities", std::move(capabilities)}};
    if (root_uri) params["rootUri"] = *root_uri;
    auto init = call("initialize", params);
    if (!init.contains("result")) throw std::runtime_error("initialize failed: " + init.dump());
    initialize_result = init["result"];
    methods = init["result"]["capabilities"]["experimental"]["methods"];
    send({{"jsonrpc", "2.0"}, {"method", "initialized"}, {"params", json::object()}});
  }
  ~ServeClient() {
    send({{"jsonrpc", "2.0"}, {"id", "bye"}, {"method", "shutdown"}});
    send({{"jsonrpc", "2.0"}, {"method", "exit"}});
    ::close(to_server_);
    server_.join();
    ::close(from_server_);
  }
  ServeClient(const ServeClient&) = delete;
  ServeClient& operator=(const ServeClient&) = delete;

  // Sends a request; returns its id.
  int request(const std::string& method, json params) {
    const int id = next_id_++;
    std::string command;
    if (method == "workspace/executeCommand" && params.is_object()) command = params.value("command", "");
    asked_[id] = {method, command};
    send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
    return id;
  }
  void notify(const std::string& method, json params) {
    send({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
  }
  void cancel(int id) { notify("$/cancelRequest", {{"id", id}}); }

  // Reads until the response to `id`, answering server requests with `answer` (none: an error
  // response) and keeping everything else. {} when the deadline passes.
  json wait_response(int id, const Answer& answer = {}, std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    const auto deadline = Clock::now() + limit;
    for (auto it = responses_.begin(); it != responses_.end(); ++it)
      if ((*it)["id"] == id) {
        json r = *it;
        responses_.erase(it);
        return r;
      }
    for (;;) {
      auto m = next(deadline);
      if (!m) return json();
      if (handle(*m, answer)) continue;
      if ((*m)["id"] == id) return *m;
      responses_.push_back(*m);
    }
  }
  json call(const std::string& method, json params, const Answer& answer = {},
            std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    return wait_response(request(method, std::move(params)), answer, limit);
  }

  // Reads until a notification matching `pred` arrives (or one already did since the last
  // match); nullopt at the deadline.
  std::optional<json> wait_notification(const std::function<bool(const json&)>& pred, std::chrono::milliseconds limit,
                                        const Answer& answer = {}) {
    for (std::size_t i = seen_; i < notifications.size(); ++i)
      if (pred(notifications[i])) {
        seen_ = i + 1;
        return notifications[i];
      }
    seen_ = notifications.size();
    const auto deadline = Clock::now() + limit;
    for (;;) {
      auto m = next(deadline);
      if (!m) return std::nullopt;
      if (handle(*m, answer)) {
        seen_ = notifications.size();
        if (m->contains("id") || !pred(*m)) continue;
        return m;
      }
      responses_.push_back(*m);
    }
  }

  // Reads (answering the server's requests with `answer`) until a request named `method` was
  // answered, or one already was since the last such wait; nullopt at the deadline.
  std::optional<json> wait_request(const std::string& method, std::chrono::milliseconds limit, const Answer& answer = {}) {
    for (std::size_t i = requests_seen_; i < server_requests.size(); ++i)
      if (server_requests[i]["method"] == method) {
        requests_seen_ = i + 1;
        return server_requests[i];
      }
    requests_seen_ = server_requests.size();
    const auto deadline = Clock::now() + limit;
    for (;;) {
      auto m = next(deadline);
      if (!m) return std::nullopt;
      if (!handle(*m, answer)) {
        responses_.push_back(*m);
        continue;
      }
      if (!m->contains("id")) continue;
      requests_seen_ = server_requests.size();
      if ((*m)["method"] == method) return m;
    }
  }

  json initialize_result;
  json methods;
  std::vector<json> notifications;
  std::vector<json> server_requests;

 private:
  // Notifications and server requests: kept (and answered); true when `m` was one.
  bool handle(const json& m, const Answer& answer) {
    if (!m.contains("method")) return false;
    if (!m.contains("id")) {
      notifications.push_back(m);
      return true;
    }
    server_requests.push_back(m);
    json reply{{"jsonrpc", "2.0"}, {"id", m["id"]}};
    json body = answer ? answer(m) : json{{"error", {{"code", -32601}, {"message", "this test client answers nothing"}}}};
    for (auto& [k, v] : body.items()) reply[k] = v;
    send(reply);
    return true;
  }

  void send(const json& m) {
    std::string bytes = protocol::encode_frame(m.dump());
    std::string_view rest = bytes;
    while (!rest.empty()) {
      ssize_t n = ::write(to_server_, rest.data(), rest.size());
      if (n <= 0) return;
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  std::optional<json> next(Clock::time_point deadline) {
    for (;;) {
      if (auto f = decoder_.next()) {
        if (!f->has_value()) throw std::runtime_error("bad frame from the server");
        json m = json::parse(**f);
        held_to_schema(m);
        return m;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{from_server_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      char buf[8192];
      ssize_t n = ::read(from_server_, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }

  void held_to_schema(const json& m) {
    if (m.contains("method") || !m.contains("id") || !m["id"].is_number_integer()) return WireSchema::instance().check_message(m);
    auto it = asked_.find(m["id"].get<int>());
    if (it == asked_.end()) return;
    const auto [method, command] = it->second;
    asked_.erase(it);
    WireSchema::instance().check_message(m, method, command);
  }

  std::map<int, std::pair<std::string, std::string>> asked_;  // id -> method, command
  int to_server_ = -1, from_server_ = -1;
  std::thread server_;
  protocol::FrameDecoder decoder_;
  int next_id_ = 1;
  std::size_t seen_ = 0;
  std::size_t requests_seen_ = 0;
  std::vector<json> responses_;
};

}  // namespace ferry::test

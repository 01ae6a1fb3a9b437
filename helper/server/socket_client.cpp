// SocketClient (socket_client.hpp).
#include "helper/server/socket_client.hpp"

#ifndef _WIN32
#include <poll.h>
#include <unistd.h>
#endif

#include "common/full_io.hpp"
#include "helper/server/project_socket.hpp"

namespace ferry::server {

using nlohmann::json;
namespace p = ferry::protocol;

#ifdef _WIN32

std::unique_ptr<SocketClient> SocketClient::connect(const std::filesystem::path&) { return nullptr; }
SocketClient::~SocketClient() = default;
std::optional<json> SocketClient::next_message(int) { return std::nullopt; }
std::expected<json, p::ResponseError> SocketClient::call(const std::string&, json, const std::function<void(const json&)>&,
                                                         const std::function<bool()>&, std::optional<std::chrono::milliseconds>) {
  return std::unexpected(p::ResponseError{p::error_code::kAgentUnavailable, "no project socket on Windows", {}});
}

#else

namespace {

bool send(int fd, const json& message) {
  const std::string frame = p::encode_frame(message.dump());
  return ferry::posix::write_full(fd, frame.data(), frame.size()) == static_cast<ssize_t>(frame.size());
}

p::ResponseError error_of(const json& e) {
  return p::ResponseError{e.value("code", 0), e.value("message", ""), e.contains("data") ? std::optional<json>(e["data"]) : std::nullopt};
}

}  // namespace

std::unique_ptr<SocketClient> SocketClient::connect(const std::filesystem::path& root) {
  auto path = project_socket_path(root);
  if (!path) return nullptr;
  auto fd = connect_project_socket(*path);
  if (!fd || !*fd) return nullptr;
  return std::unique_ptr<SocketClient>(new SocketClient(**fd));
}

SocketClient::~SocketClient() { ::close(fd_); }

std::optional<json> SocketClient::next_message(int timeout_ms) {
  for (;;) {
    if (auto frame = decoder_.next()) {
      if (!frame->has_value()) return json{{"error", {{"code", p::error_code::kParseError}, {"message", "bad frame from the live ferry"}}}};
      auto m = json::parse(**frame, nullptr, false);
      if (m.is_discarded()) continue;
      return m;
    }
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, timeout_ms);
    if (ready == 0) return std::nullopt;
    char buf[65536];
    const ssize_t n = ready > 0 ? ::read(fd_, buf, sizeof buf) : -1;
    if (n <= 0) return json{{"error", {{"code", p::error_code::kAgentUnavailable}, {"message", "the live ferry closed the connection"}}}};
    decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
  }
}

std::expected<json, p::ResponseError> SocketClient::call(const std::string& method, json params,
                                                         const std::function<void(const json&)>& progress,
                                                         const std::function<bool()>& cancelled,
                                                         std::optional<std::chrono::milliseconds> limit) {
  const int id = next_id_++;
  const std::string token = "cli-" + std::to_string(id);
  if (progress && params.is_object()) params["workDoneToken"] = token;
  if (!send(fd_, json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}))
    return std::unexpected(p::ResponseError{p::error_code::kAgentUnavailable, "cannot write to the live ferry", {}});
  const auto deadline = limit ? std::chrono::steady_clock::now() + *limit : std::chrono::steady_clock::time_point::max();
  bool cancel_sent = false;
  for (;;) {
    if (!cancel_sent && cancelled && cancelled()) {
      cancel_sent = true;
      send(fd_, json{{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", id}}}});
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return std::unexpected(p::ResponseError{p::error_code::kAgentUnavailable, "no answer from the live ferry to " + method, {}});
    auto m = next_message(100);
    if (!m) continue;
    if (m->value("method", "") == "$/progress") {
      if (progress && (*m)["params"].value("token", "") == token) progress((*m)["params"]["value"]);
      continue;
    }
    if (!m->contains("id") || (*m)["id"] != id) {
      if (m->contains("error")) return std::unexpected(error_of((*m)["error"]));  // the connection's end
      continue;
    }
    if (m->contains("error")) return std::unexpected(error_of((*m)["error"]));
    return (*m)["result"];
  }
}

#endif

}  // namespace ferry::server

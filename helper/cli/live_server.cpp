// LiveServer (live_server.hpp).
#include "helper/cli/live_server.hpp"

#include <cstdlib>

#ifndef _WIN32
#include <poll.h>
#include <unistd.h>
#endif

#include <spdlog/spdlog.h>

#include "common/build_info.hpp"
#include "common/full_io.hpp"
#include "helper/server/project_socket.hpp"

namespace ferry::cli {

using nlohmann::json;
namespace p = ferry::protocol;

#ifdef _WIN32

// The project socket is POSIX only for now: a Windows ferry always makes its own link.
std::unique_ptr<LiveServer> LiveServer::find(const deploy::ProjectConfig&) { return nullptr; }
LiveServer::~LiveServer() = default;
std::optional<json> LiveServer::next_message(int) { return std::nullopt; }
std::expected<json, p::ResponseError> LiveServer::call(const std::string&, json, const std::function<void(const json&)>&,
                                                       const std::function<bool()>&) {
  return std::unexpected(p::ResponseError{p::error_code::kAgentUnavailable, "no project socket on Windows", {}});
}

#else

namespace {

bool send(int fd, const json& message) {
  const std::string frame = p::encode_frame(message.dump());
  return ferry::posix::write_full(fd, frame.data(), frame.size()) == static_cast<ssize_t>(frame.size());
}

}  // namespace

std::unique_ptr<LiveServer> LiveServer::find(const deploy::ProjectConfig& project) {
  if (const char* off = std::getenv("FERRY_NO_DAEMON"); off && *off && std::string(off) != "0") return nullptr;
  auto path = server::project_socket_path(project.root);
  if (!path) return nullptr;
  auto fd = server::connect_project_socket(*path);
  if (!fd || !*fd) return nullptr;
  std::unique_ptr<LiveServer> live(new LiveServer(**fd));
  auto hello = live->call("ferry/hello", json{{"path", project.root.string()}});
  if (!hello) return nullptr;
  if (hello->value("version", "") != ferry::version_text()) {
    spdlog::info("the live ferry serve is {}, this ferry {}: not riding it", hello->value("version", ""), ferry::version_text());
    return nullptr;
  }
  if (!hello->value("linked", false)) return nullptr;  // its connect would ask the editor, not this terminal
  live->endpoint_ = hello->value("endpoint", "");
  live->pid_ = hello->value("pid", 0LL);
  spdlog::info("riding ferry serve (pid {}) at {}", live->pid_, path->string());
  return live;
}

LiveServer::~LiveServer() { ::close(fd_); }

std::optional<json> LiveServer::next_message(int timeout_ms) {
  for (;;) {
    if (auto frame = decoder_.next()) {
      if (!frame->has_value()) return json{{"error", {{"code", p::error_code::kParseError}, {"message", "bad frame from ferry serve"}}}};
      auto m = json::parse(**frame, nullptr, false);
      if (m.is_discarded()) continue;
      return m;
    }
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, timeout_ms);
    if (ready == 0) return std::nullopt;
    char buf[65536];
    const ssize_t n = ready > 0 ? ::read(fd_, buf, sizeof buf) : -1;
    if (n <= 0) return json{{"error", {{"code", p::error_code::kAgentUnavailable}, {"message", "ferry serve closed the connection"}}}};
    decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
  }
}

std::expected<json, p::ResponseError> LiveServer::call(const std::string& method, json params,
                                                       const std::function<void(const json&)>& progress,
                                                       const std::function<bool()>& cancelled) {
  const int id = next_id_++;
  const std::string token = "cli-" + std::to_string(id);
  if (progress && params.is_object()) params["workDoneToken"] = token;
  if (!send(fd_, json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}))
    return std::unexpected(p::ResponseError{p::error_code::kAgentUnavailable, "cannot write to ferry serve", {}});
  bool cancel_sent = false;
  for (;;) {
    if (!cancel_sent && cancelled && cancelled()) {
      cancel_sent = true;
      send(fd_, json{{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", id}}}});
    }
    auto m = next_message(100);
    if (!m) continue;
    if (m->value("method", "") == "$/progress") {
      if (progress && (*m)["params"].value("token", "") == token) progress((*m)["params"]["value"]);
      continue;
    }
    if (!m->contains("id") || (*m)["id"] != id) {
      if (m->contains("error")) return std::unexpected(p::ResponseError{(*m)["error"].value("code", 0), (*m)["error"].value("message", ""), {}});
      continue;
    }
    if (m->contains("error")) {
      const json& e = (*m)["error"];
      return std::unexpected(p::ResponseError{e.value("code", 0), e.value("message", ""), e.contains("data") ? std::optional<json>(e["data"]) : std::nullopt});
    }
    return (*m)["result"];
  }
}

#endif

}  // namespace ferry::cli

// Agent method implementations: see agent_service.hpp.
#include "remote-runtime/agent/agent_service.hpp"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/file_times.hpp"
#include "ferry/version.hpp"

namespace ferry::agent {
namespace {

using protocol::json;
using protocol::Response;
namespace ec = protocol::error_code;

Response invalid_params(const protocol::RequestId& id, const std::string& method, const std::string& why) {
  return protocol::make_error(id, ec::kInvalidParams, method + ": " + why);
}

const char* file_type(mode_t mode) {
  if (S_ISREG(mode)) return "file";
  if (S_ISDIR(mode)) return "dir";
  if (S_ISLNK(mode)) return "symlink";
  return "other";
}

}  // namespace

std::optional<Response> AgentService::handle(const protocol::Message& message) {
  if (const auto* req = std::get_if<protocol::Request>(&message)) return dispatch(*req);
  if (const auto* note = std::get_if<protocol::Notification>(&message)) {
    // Requests are answered in order and quickly, so there is nothing to cancel yet.
    spdlog::debug("notification {} ignored", note->method);
  }
  return std::nullopt;
}

Response AgentService::dispatch(const protocol::Request& r) {
  const json& p = r.params;
  if (r.method == "agent/hello") {
    if (!p.is_object() || !p.contains("protocolVersion") || !p["protocolVersion"].is_number_integer())
      return invalid_params(r.id, r.method, "expected {protocolVersion: integer, helperVersion: string}");
    int theirs = p["protocolVersion"].get<int>();
    if (theirs != kAgentProtocolVersion) {
      return protocol::make_error(r.id, ec::kAgentVersionMismatch,
                                  "agent speaks protocol " + std::to_string(kAgentProtocolVersion) +
                                      ", this ferry speaks " + std::to_string(theirs),
                                  json{{"agentProtocolVersion", kAgentProtocolVersion}, {"agentVersion", kVersion}});
    }
    if (auto hv = p.find("helperVersion"); hv != p.end() && hv->is_string())
      spdlog::debug("hello from ferry {}", hv->get<std::string>());
    utsname u{};
    uname(&u);
    return protocol::make_result(r.id, json{{"protocolVersion", kAgentProtocolVersion},
                                            {"version", kVersion},
                                            {"pid", static_cast<long long>(getpid())},
                                            {"root", root_.root().string()},
                                            {"os", u.sysname},
                                            {"arch", u.machine},
                                            {"hostname", u.nodename}});
  }
  if (r.method == "agent/ping") {
    json result{{"pong", true}};
    if (p.is_object()) {
      if (auto e = p.find("echo"); e != p.end()) result["echo"] = *e;
      if (auto d = p.find("delayMs"); d != p.end()) {
        if (!d->is_number_integer() || d->get<long long>() < 0 || d->get<long long>() > kMaxPingDelayMs)
          return invalid_params(r.id, r.method, "delayMs must be an integer from 0 to " + std::to_string(kMaxPingDelayMs));
        // A latency probe: lets the helper measure and test behaviour with a slow peer.
        std::this_thread::sleep_for(std::chrono::milliseconds(d->get<long long>()));
      }
    }
    return protocol::make_result(r.id, result);
  }
  if (r.method == "fs/stat") {
    if (!p.is_object() || !p.contains("path") || !p["path"].is_string())
      return invalid_params(r.id, r.method, "expected {path: string relative to the root}");
    auto resolved = root_.resolve(p["path"].get<std::string>());
    if (!resolved) return invalid_params(r.id, r.method, resolved.error());
    struct stat st {};
    if (lstat(resolved->absolute.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR)
        return protocol::make_result(r.id, json{{"exists", false}, {"path", resolved->relative}});
      return protocol::make_error(r.id, ec::kIoError, "fs/stat '" + resolved->relative + "': " + std::strerror(errno));
    }
    return protocol::make_result(r.id, json{{"exists", true},
                                            {"path", resolved->relative},
                                            {"type", file_type(st.st_mode)},
                                            {"size", static_cast<long long>(st.st_size)},
                                            {"mtimeNs", ferry::posix::mtime_of(st)},
                                            {"mode", static_cast<unsigned>(st.st_mode & 07777)}});
  }
  if (r.method == "agent/shutdown") {
    shutdown_ = true;
    return protocol::make_result(r.id, json::object());
  }
  for (const auto& extra : extra_)
    if (auto reply = extra(r)) return std::move(*reply);
  return protocol::make_error(r.id, ec::kMethodNotFound, "the agent has no method '" + r.method + "'");
}

}  // namespace ferry::agent

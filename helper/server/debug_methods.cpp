// debug/prepare: the IDE's `ferry debug`. Starts the script on the project's host under debugpy
// (after checking debugpy is there), opens a local tunnel to it and returns a ready VS Code
// attach configuration with the run id and the tunnel's port. The session keeps its own link
// (the tunnel lives in it) until the run has ended; the IDE follows the output with run/attach
// and should call sync/flush first, as it does before run/start.
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "helper/debug/debug_launcher.hpp"
#include "helper/remote/endpoint_factory.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/run/run_client.hpp"
#include "helper/server/project_lookup.hpp"
#include "helper/server/server.hpp"
#include "helper/sync/mapping_target.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/json_reader.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
namespace fs = std::filesystem;

struct DebugPrepareParams {
  std::optional<std::string> path;        // the project, as for project/load
  std::vector<std::string> command;       // script and args, or -m MODULE ...
  int port = debug::kDefaultDebugpyPort;  // debugpy's port on the box
  std::optional<int> local_port;          // the tunnel's port here; default `port`, 0 any
  std::map<std::string, std::string> env;
  std::string cwd;
  bool legacy_type = false;
  bool just_my_code = true;
  int wait = 30;
};

std::optional<p::DecodeError> from_json(const p::json& j, DebugPrepareParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.required("command", out.command);
  r.optional("port", out.port);
  r.optional("localPort", out.local_port);
  r.optional("env", out.env);
  r.optional("cwd", out.cwd);
  r.optional("legacyType", out.legacy_type);
  r.optional("justMyCode", out.just_my_code);
  r.optional("wait", out.wait);
  r.check(!out.command.empty(), "command", "expected the script (or -m MODULE) and its arguments");
  r.check(out.port >= 1 && out.port <= 65535, "port", "expected a TCP port (1-65535)");
  r.check(!out.local_port || (*out.local_port >= 0 && *out.local_port <= 65535), "localPort",
          "expected a TCP port (0-65535; 0 picks a free one)");
  r.check(out.wait >= 1 && out.wait <= 3600, "wait", "expected seconds between 1 and 3600");
  return r.error();
}

struct DebugPrepareResult {
  p::json configuration;
  std::string run_id;
  int local_port = 0;
};

p::json to_json(const DebugPrepareResult& r) {
  return {{"configuration", r.configuration}, {"runId", r.run_id}, {"localPort", r.local_port}};
}

namespace {

// One prepared session: the link that holds the tunnel, until its run ends.
struct DebugSession {
  std::unique_ptr<remote::Endpoint> endpoint;
  std::unique_ptr<run::RunClient> client;
  std::string run_id;
  int forward_id = 0;
};

class DebugSessions {
 public:
  ~DebugSessions() {
    std::lock_guard lock(mutex_);
    for (auto& s : sessions_) close(*s);
  }

  std::expected<DebugPrepareResult, p::ResponseError> prepare(const DebugPrepareParams& params,
                                                               const ServerOptions& options) {
    auto config = lookup_project(params.path, options);
    if (!config) return std::unexpected(config.error());
    reap_finished();

    auto session = std::make_unique<DebugSession>();
    debug::DebugTarget target;
    const deploy::Mapping& m = config->mappings.front();
    if (config->host == "local") {
      target.remote_base = sync::mapping_target(*config, m).remote_base;
      session->endpoint = std::make_unique<remote::LocalEndpoint>(sync::local_endpoint_options(*config, m));
    } else {
      auto ssh = remote::make_ssh_target("", "", std::nullopt, &*config);
      if (!ssh) return std::unexpected(p::ResponseError{p::error_code::kProjectInvalid, "debug/prepare: " + ssh.error(), {}});
      session->endpoint = std::make_unique<remote::SshEndpoint>(remote::ssh_endpoint_options(*ssh));
    }
    auto info = session->endpoint->connect();
    if (!info) return std::unexpected(info.error());
    target.first_remote_root = (fs::path(info->root) / target.remote_base).lexically_normal().string();
    while (target.first_remote_root.size() > 1 && target.first_remote_root.back() == '/') target.first_remote_root.pop_back();
    target.project = std::move(*config);

    debug::DebugRequest request;
    request.command = params.command;
    request.port = params.port;
    request.local_port = params.local_port;
    for (const auto& [k, v] : params.env) request.env.push_back(k + "=" + v);
    request.cwd = params.cwd;
    request.wait = std::chrono::seconds(params.wait);
    request.attach.legacy_type = params.legacy_type;
    request.attach.just_my_code = params.just_my_code;

    session->client = std::make_unique<run::RunClient>(*session->endpoint);
    auto launched = debug::launch_under_debugpy(*session->endpoint, *session->client, target, request);
    if (!launched) {
      const auto& e = launched.error();
      int code = p::error_code::kInternalError;
      switch (e.kind) {
        case debug::DebugErrorKind::usage: code = p::error_code::kInvalidParams; break;
        case debug::DebugErrorKind::no_debugpy: code = kDebugpyMissing; break;
        case debug::DebugErrorKind::interrupted: code = p::error_code::kRequestCancelled; break;
        case debug::DebugErrorKind::debuggee_ended:
        case debug::DebugErrorKind::failure: code = p::error_code::kAgentUnavailable; break;
      }
      p::json data = p::json::object();
      if (e.run_id) data["runId"] = *e.run_id;
      if (e.kind == debug::DebugErrorKind::no_debugpy) data["install"] = e.message;
      close(*session);
      return std::unexpected(p::ResponseError{code, "debug/prepare: " + e.message, data});
    }
    session->run_id = launched->run_id;
    session->forward_id = launched->forward.id;
    DebugPrepareResult result{launched->configuration, launched->run_id, launched->forward.bound_port};
    spdlog::info("debug/prepare: run {} under debugpy, tunnel {}", launched->run_id, remote::describe(launched->forward));
    std::lock_guard lock(mutex_);
    sessions_.push_back(std::move(session));
    return result;
  }

  // debugpy's error when the interpreter cannot import it (ferry's range, see protocol.md).
  static constexpr int kDebugpyMissing = -32090;

 private:
  static void close(DebugSession& s) {
    if (!s.endpoint) return;
    if (s.forward_id) (void)s.endpoint->close_forward(s.forward_id);
    s.client.reset();
    s.endpoint->close();
  }

  // Sessions whose run has ended give their link back (checked on each new prepare).
  void reap_finished() {
    std::lock_guard lock(mutex_);
    std::erase_if(sessions_, [](std::unique_ptr<DebugSession>& s) {
      auto runs = s->client ? s->client->list(true) : std::expected<std::vector<run::RunInfo>, p::ResponseError>{};
      bool running = false;
      if (runs)
        for (const auto& r : *runs) running = running || (r.id == s->run_id && r.state == "running");
      if (running) return false;
      close(*s);
      return true;
    });
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<DebugSession>> sessions_;
};

}  // namespace

void bind_debug_methods(p::BindingTable& table, const ServerOptions& options) {
  auto sessions = std::make_shared<DebugSessions>();
  table.request<DebugPrepareParams, DebugPrepareResult>(
      "debug/prepare",
      [sessions, &options](const DebugPrepareParams& params, p::CallContext& ctx)
          -> std::expected<DebugPrepareResult, p::ResponseError> {
        auto progress = ctx.progress();
        progress.begin("Starting the debugger");
        auto r = sessions->prepare(params, options);
        progress.end();
        return r;
      },
      p::Execution::worker);
}

}  // namespace ferry::server

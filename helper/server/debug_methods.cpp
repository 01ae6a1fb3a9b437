// debug/prepare: the IDE's `ferry debug`. Starts the script on the project's host under debugpy
// (after checking debugpy is there), opens a local tunnel to it and returns a ready VS Code
// attach configuration with the run id and the tunnel's port. The tunnel lives on the project's
// link until the run has ended; the editor follows the output with run/attach and should call
// sync/flush first, as it does before run/start.
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "helper/debug/debug_launcher.hpp"
#include "helper/run/run_client.hpp"
#include "helper/server/debug_service.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/json_reader.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
namespace fs = std::filesystem;


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


p::json to_json(const DebugPrepareResult& r) {
  return {{"configuration", r.configuration}, {"runId", r.run_id}, {"localPort", r.local_port}};
}

namespace {

// One prepared session: its tunnel on the project's link, until its run ends.
struct DebugSession {
  ProjectLinkPtr link;
  std::string run_id;
  int forward_id = 0;
};

}  // namespace

class DebugSessions {
 public:
  explicit DebugSessions(const ServerContext& ctx) : ctx_(ctx) {}
  ~DebugSessions() {
    std::lock_guard lock(mutex_);
    for (auto& s : sessions_) close(*s);
  }

  std::expected<DebugPrepareResult, p::ResponseError> prepare(const DebugPrepareParams& params,
                                                               const p::CancellationToken& cancel) {
    auto config = lookup_project(params.path, ctx_.workspace);
    if (!config) return std::unexpected(config.error());
    reap_finished();

    auto session = std::make_unique<DebugSession>();
    auto link = ctx_.sessions.link(*config, cancel);
    if (!link) return std::unexpected(link.error());
    session->link = *link;
    debug::DebugTarget target;
    target.remote_base = session->link->target().remote_base;
    target.first_remote_root = session->link->mapping_root();
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

    auto launched =
        debug::launch_under_debugpy(session->link->endpoint(), session->link->runs(), target, request);
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
  // Only the session's tunnel: the link is the project's.
  static void close(DebugSession& s) {
    if (s.link && s.forward_id) (void)s.link->endpoint().close_forward(s.forward_id);
    s.forward_id = 0;
  }

  // Sessions whose run has ended close their tunnel (checked on each new prepare).
  void reap_finished() {
    std::lock_guard lock(mutex_);
    std::erase_if(sessions_, [](std::unique_ptr<DebugSession>& s) {
      auto runs = s->link->runs().list(true);
      bool running = false;
      if (runs)
        for (const auto& r : *runs) running = running || (r.id == s->run_id && r.state == "running");
      if (running) return false;
      close(*s);
      return true;
    });
  }

  const ServerContext& ctx_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<DebugSession>> sessions_;
};

std::shared_ptr<DebugSessions> make_debug_sessions(const ServerContext& ctx) { return std::make_shared<DebugSessions>(ctx); }

std::expected<DebugPrepareResult, p::ResponseError> prepare_debug(DebugSessions& sessions, const DebugPrepareParams& params,
                                                                  const p::CancellationToken& cancel) {
  return sessions.prepare(params, cancel);
}

void bind_debug_methods(p::BindingTable& table, std::shared_ptr<DebugSessions> sessions) {
  table.request<DebugPrepareParams, DebugPrepareResult>(
      "debug/prepare",
      [sessions](const DebugPrepareParams& params, p::CallContext& ctx)
          -> std::expected<DebugPrepareResult, p::ResponseError> {
        auto progress = ctx.progress();
        progress.begin("Starting the debugger");
        auto r = sessions->prepare(params, ctx.cancellation());
        progress.end();
        return r;
      },
      p::Execution::worker);
}

}  // namespace ferry::server

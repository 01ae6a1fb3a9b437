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
#include "helper/server/error_codes.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/messages_run.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
namespace fs = std::filesystem;


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
      ErrorKind kind = ErrorKind::internal;
      switch (e.kind) {
        case debug::DebugErrorKind::usage: kind = ErrorKind::invalid_input; break;
        case debug::DebugErrorKind::no_debugpy: kind = ErrorKind::debugpy_missing; break;
        case debug::DebugErrorKind::interrupted: kind = ErrorKind::cancelled; break;
        case debug::DebugErrorKind::debuggee_ended:
        case debug::DebugErrorKind::failure: kind = ErrorKind::agent_lost; break;
      }
      p::json data = p::json::object();
      if (e.run_id) data["runId"] = *e.run_id;
      if (e.kind == debug::DebugErrorKind::no_debugpy) data["install"] = e.message;
      close(*session);
      return std::unexpected(response_error({kind, e.message, data}, p::method::kDebugPrepare));
    }
    session->run_id = launched->run_id;
    session->forward_id = launched->forward.id;
    DebugPrepareResult result{launched->configuration, launched->run_id, launched->forward.bound_port};
    spdlog::info("debug/prepare: run {} under debugpy, tunnel {}", launched->run_id, remote::describe(launched->forward));
    std::lock_guard lock(mutex_);
    sessions_.push_back(std::move(session));
    return result;
  }

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
        for (const auto& r : *runs) running = running || (r.id == s->run_id && protocol::run_state_from_string(r.state) == protocol::RunState::running);
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
      p::method::kDebugPrepare,
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

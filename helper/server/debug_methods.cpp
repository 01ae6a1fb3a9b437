// debug/prepare: the IDE's `ferry debug`. Starts the script on the project's host under debugpy
// (after checking debugpy is there), opens a local tunnel to it and returns a ready VS Code
// attach configuration with the run id and the tunnel's port. The tunnel lives on the project's
// link until the run has ended; the editor follows the output with run/attach and should call
// sync/flush first, as it does before run/start.
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <condition_variable>
#include <thread>
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "helper/debug/debug_launcher.hpp"
#include "helper/remote/job_endpoint.hpp"
#include "helper/run/slurm_allocation.hpp"
#include "helper/run/run_client.hpp"
#include "helper/server/debug_service.hpp"
#include "helper/server/error_codes.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/messages_run.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
namespace fs = std::filesystem;


namespace {

// One prepared session: its tunnel on the project's link, until its run ends. On a Slurm project
// the debuggee is a step of an allocation and the tunnel goes through an agent in it (`node`);
// an allocation taken for the session is released with it.
struct DebugSession {
  ProjectLinkPtr link;
  std::string run_id;
  int forward_id = 0;
  std::unique_ptr<remote::JobEndpoint> node;
  std::string session_allocation;
  remote::Endpoint& tunnels() { return node ? static_cast<remote::Endpoint&>(*node) : link->endpoint(); }
};

using Report = std::function<void(const std::string&)>;

// A Slurm project's node for the debuggee: `ferry alloc`'s allocation, else one taken for this
// session (its pending reasons reported, the editor's cancel taking it back), with the agent in
// it that the tunnel will go through. Fills the target's allocation.
std::expected<void, p::ResponseError> enter_compute_node(DebugSession& session, debug::DebugTarget& target, const Report& report,
                                                         const p::CancellationToken& cancel) {
  const auto& project = target.project;
  auto* ssh = dynamic_cast<remote::SshEndpoint*>(&session.link->endpoint());
  if (!ssh) return std::unexpected(response_error({ErrorKind::invalid_input, "a Slurm project's host must be an SSH login node", {}}, p::method::kDebugPrepare));
  auto job = run::running_allocation(*ssh, project);
  if (!job) return std::unexpected(job.error());
  if (!*job) {
    auto id = run::allocate(*ssh, project, *project.slurm);
    if (!id) return std::unexpected(id.error());
    session.session_allocation = *id;
    report("Slurm job " + *id + " submitted (a node for this debug session)");
    auto running = run::wait_running(
        *ssh, project, *id, [&](const run::SlurmJobInfo& j) { report(run::describe_allocation(j)); },
        [&cancel](std::chrono::milliseconds interval) { return cancel.wait_for(interval); });
    if (!running) return std::unexpected(running.error());
    *job = *running;
  }
  report("debugging in " + run::describe_allocation(**job));
  auto node = run::open_allocation_endpoint(*ssh, project, **job);
  if (!node) return std::unexpected(node.error());
  session.node = std::move(*node);
  target.allocation = (*job)->job_id;
  target.allocation_node = run::first_node((*job)->nodes);
  return {};
}

}  // namespace

class DebugSessions {
 public:
  explicit DebugSessions(const ServerContext& ctx) : ctx_(ctx) {}
  ~DebugSessions() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (reaper_.joinable()) reaper_.join();
    std::lock_guard lock(mutex_);
    for (auto& s : sessions_) close(*s);
  }

  std::expected<DebugPrepareResult, p::ResponseError> prepare(const DebugPrepareParams& params, const p::CancellationToken& cancel,
                                                               const Report& report = {}) {
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
    if (target.project.slurm) {
      if (auto entered = enter_compute_node(*session, target, report ? report : Report([](const std::string&) {}), cancel); !entered) {
        close(*session);
        return std::unexpected(entered.error());
      }
    }

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
        debug::launch_under_debugpy(session->tunnels(), session->link->runs(), target, request);
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
    const bool holds_a_node = !session->session_allocation.empty();
    std::lock_guard lock(mutex_);
    sessions_.push_back(std::move(session));
    if (holds_a_node && !reaper_.joinable()) reaper_ = std::thread([this] { release_nodes_loop(); });
    return result;
  }

 private:
  // Only the session's tunnel (and what it took on a cluster): the link is the project's.
  static void close(DebugSession& s) {
    if (s.link && s.forward_id) (void)s.tunnels().close_forward(s.forward_id);
    s.forward_id = 0;
    if (s.node) s.node->close();
    s.node.reset();
    if (s.link && !s.session_allocation.empty()) {
      if (auto r = run::release(s.link->endpoint(), s.link->config(), s.session_allocation); !r)
        spdlog::warn("debug: cannot release Slurm job {}: {}", s.session_allocation, r.error().message);
      s.session_allocation.clear();
    }
  }

  // Sessions whose run has ended close their tunnel (checked on each new prepare, and by
  // release_nodes_loop while a session holds a node).
  void reap_finished() {
    std::lock_guard lock(mutex_);
    std::erase_if(sessions_, [](std::unique_ptr<DebugSession>& s) {
      auto runs = s->link->runs().list(true);
      if (!runs) return false;  // the link is down: not known to have ended
      bool running = false;
      for (const auto& r : *runs) running = running || (r.id == s->run_id && protocol::run_state_from_string(r.state) == protocol::RunState::running);
      if (running) return false;
      close(*s);
      return true;
    });
  }

  // A node taken for a session is a cluster's resource held for nothing once the debuggee ends:
  // while such sessions exist, their runs are looked at every few seconds, and a finished one's
  // tunnel, agent and allocation go.
  void release_nodes_loop() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      cv_.wait_for(lock, kNodeCheckInterval);
      if (stopping_) break;
      const bool any = std::any_of(sessions_.begin(), sessions_.end(), [](const auto& s) { return !s->session_allocation.empty(); });
      if (!any) continue;
      lock.unlock();
      reap_finished();
      lock.lock();
    }
  }

  static constexpr std::chrono::seconds kNodeCheckInterval{3};
  const ServerContext& ctx_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<std::unique_ptr<DebugSession>> sessions_;
  std::thread reaper_;
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
        auto r = sessions->prepare(params, ctx.cancellation(), [&progress](const std::string& m) { progress.report(m); });
        progress.end();
        return r;
      },
      p::Execution::worker);
}

}  // namespace ferry::server

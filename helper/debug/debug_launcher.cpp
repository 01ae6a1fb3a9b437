// debug_launcher: check debugpy, start the debuggee, wait for its listener, open the tunnel.
#include "helper/debug/debug_launcher.hpp"

#include <algorithm>
#include <cerrno>
#include <memory>

#include "common/wakeup.hpp"
#include "helper/run/launch_spec.hpp"
#include "helper/run/run_follower.hpp"

namespace ferry::debug {

namespace {

using Clock = std::chrono::steady_clock;

// A run followed to its end (output to `sink`), driven from the calling thread; `started` is its
// start, whose stream (RunClient::start's `attach`) the follower adopts when it has one.
class Followed {
 public:
  Followed(run::RunClient& client, const run::StartedRun& started, run::RunFollower::Sink sink)
      : follower_(client, started.id, 0, std::move(sink)) {
    if (started.attached) follower_.adopt_start_attach(client.endpoint().connected());
  }
  platform::Wakeup& wakeup() { return follower_.wakeup(); }
  // Attaches when due; true once the run is over (or cannot be followed).
  bool step() {
    follower_.drain();
    if (follower_.needs_attach()) (void)follower_.attach();
    return follower_.finished() || follower_.failed().has_value();
  }
  std::optional<run::RunExit> exit() const { return follower_.exit(); }
  std::optional<std::string> failed() const { return follower_.failed(); }

 private:
  run::RunFollower follower_;
};

DebugError make_error(DebugErrorKind kind, std::string message, std::optional<std::string> run_id = {}) {
  DebugError e;
  e.kind = kind;
  e.message = std::move(message);
  e.run_id = std::move(run_id);
  return e;
}

enum class Woke { change, interrupt, deadline };

// The interrupt comes first (a run's steady output must not hide it) and is looked at, not
// lowered: it belongs to the caller (the CLI reads its kind).
Woke wait_any(const std::vector<Followed*>& runs, platform::Wakeup* interrupt, Clock::time_point deadline) {
  std::vector<platform::Wakeup*> wakeups;
  if (interrupt) wakeups.push_back(interrupt);
  for (auto* r : runs) wakeups.push_back(&r->wakeup());
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Woke::deadline;
    const int woke = platform::wait_any(wakeups, std::chrono::milliseconds(std::min<long long>(left, 60'000)));
    if (woke < 0) continue;
    return interrupt && woke == 0 ? Woke::interrupt : Woke::change;
  }
}

struct Finished {
  run::RunExit exit;
  std::string out, err;
};

// A short helper run (the check, the probe) to its end; removed afterwards so `ferry runs`
// shows only what the user started.
std::expected<Finished, DebugError> run_to_end(run::RunClient& client, const run::RunSpec& spec, platform::Wakeup* interrupt,
                                               std::chrono::seconds timeout, const std::string& what) {
  auto started = client.start(spec, /*attach, no ports=*/false);
  if (!started) return std::unexpected(make_error(DebugErrorKind::failure, "cannot start " + what + ": " + started.error().message));
  auto result = std::make_shared<Finished>();
  std::expected<Finished, DebugError> out = std::unexpected(make_error(DebugErrorKind::failure, what));
  {
    Followed r(client, *started, [result](const run::OutputRecord& rec) {
      (rec.stream == run::Stream::stdout_stream ? result->out : result->err) += rec.data;
    });
    const auto deadline = Clock::now() + timeout;
    while (!r.step()) {
      const auto woke = wait_any({&r}, interrupt, deadline);
      if (woke == Woke::change) continue;
      (void)client.signal(started->id, "KILL");
      return std::unexpected(make_error(woke == Woke::interrupt ? DebugErrorKind::interrupted : DebugErrorKind::failure,
                                        woke == Woke::interrupt ? "interrupted" : what + " did not finish within " + std::to_string(timeout.count()) + " s"));
    }
    if (r.failed()) return std::unexpected(make_error(DebugErrorKind::failure, what + ": " + *r.failed()));
    result->exit = *r.exit();
    out = *result;
  }
  (void)client.remove(started->id);
  return out;
}

}  // namespace

std::expected<run::RunSpec, std::string> debug_run_spec(const DebugTarget& target, const DebugRequest& request,
                                                        std::vector<std::string> args) {
  if (target.project.slurm && target.allocation.empty())
    return std::unexpected("on a Slurm cluster this would debug on the login node, not on a compute node: "
                           "ferry debug from the terminal takes a node for the session (or uses `ferry alloc`'s; docs/slurm.md)");
  run::LaunchRequest r;
  r.command = std::move(args);
  r.interpreter = target.project.interpreter;
  r.config_env = target.project.env;
  r.cli_env = request.env;
  r.cwd = request.cwd;
  r.remote_base = target.remote_base;
  r.mapping_root = target.first_remote_root;
  r.allocation = target.allocation;
  r.allocation_node = target.allocation_node;
  return run::make_run_spec(r);
}

std::expected<DebugLaunch, DebugError> launch_under_debugpy(remote::Endpoint& tunnels, run::RunClient& client,
                                                           const DebugTarget& target, const DebugRequest& request) {
  auto usage = [](std::string m) { return std::unexpected(make_error(DebugErrorKind::usage, std::move(m))); };
  auto args = debuggee_args(request.port, request.command);
  if (!args) return usage(args.error());
  auto spec = debug_run_spec(target, request, *args);
  if (!spec) return usage(spec.error());
  auto check_spec = debug_run_spec(target, request, debugpy_check_args(request.port));
  auto probe_spec = debug_run_spec(target, request, listen_probe_args(request.port, request.wait));
  if (!check_spec || !probe_spec) return usage(check_spec ? probe_spec.error() : check_spec.error());
  auto mappings = resolve_path_mappings(target.project, target.first_remote_root);
  if (!mappings) return usage(mappings.error());

  // 1. debugpy importable by the configured interpreter, in the run's own environment.
  auto check = run_to_end(client, *check_spec, request.interrupt, std::chrono::seconds(60),
                          "the debugpy check (" + target.project.interpreter + ")");
  if (!check) return std::unexpected(check.error());
  if (run::exit_status(check->exit) == kDebugPortInUse && check->err.find("port in use") != std::string::npos)
    return std::unexpected(make_error(
        DebugErrorKind::usage, "port " + std::to_string(request.port) +
                                   " on the box is already in use (another debug session, or another program); choose "
                                   "another for debugpy (ferry debug --port N, ferry.debugPort in VS Code, debug/prepare's port)"));
  if (run::exit_status(check->exit) != 0) {
    if (check->err.find("No module named") != std::string::npos || check->err.find("ModuleNotFoundError") != std::string::npos)
      return std::unexpected(make_error(DebugErrorKind::no_debugpy, debugpy_install_advice(target.project.interpreter)));
    return std::unexpected(make_error(DebugErrorKind::failure, target.project.interpreter + " failed on the box (" +
                                                                   run::describe(check->exit) + "): " + check->err));
  }
  DebugLaunch launch;
  launch.debugpy_version = check->out;

  // 2. The debuggee, waiting for the IDE; 3. its listener, watched without connecting.
  auto started = client.start(*spec, /*attach, no ports=*/false);
  if (!started) return std::unexpected(make_error(DebugErrorKind::failure, "cannot start the run: " + started.error().message));
  launch.run_id = started->id;
  auto fail = [&](DebugErrorKind kind, std::string message) {
    (void)client.signal(launch.run_id, "KILL");
    return std::unexpected(make_error(kind, std::move(message), launch.run_id));
  };
  auto probe_started = client.start(*probe_spec, /*attach, no ports=*/false);
  if (!probe_started) client.claim(launch.run_id, nullptr);  // the debuggee is given up below
  if (!probe_started) return fail(DebugErrorKind::failure, "cannot watch for debugpy's listener: " + probe_started.error().message);
  {
    Followed probe(client, *probe_started, [](const run::OutputRecord&) {});
    Followed debuggee(client, *started, [](const run::OutputRecord&) {});  // only its end matters here
    const auto deadline = Clock::now() + request.wait + std::chrono::seconds(10);
    bool probe_done = probe.step(), debuggee_done = debuggee.step();
    while (!probe_done && !debuggee_done) {
      const auto woke = wait_any({&probe, &debuggee}, request.interrupt, deadline);
      if (woke == Woke::interrupt) {
        (void)client.signal(probe_started->id, "KILL");
        return fail(DebugErrorKind::interrupted, "interrupted");
      }
      if (woke == Woke::deadline) break;
      probe_done = probe.step();
      debuggee_done = debuggee.step();
    }
    if (!probe_done) (void)client.signal(probe_started->id, "KILL");
    if (debuggee_done) {
      DebugError e = make_error(DebugErrorKind::debuggee_ended, "run " + launch.run_id + " ended before a debugger attached (" +
                                    (debuggee.exit() ? run::describe(*debuggee.exit()) : std::string("lost")) + ")",
                                launch.run_id);
      e.exit = debuggee.exit();
      return std::unexpected(std::move(e));
    }
    const bool listening = probe_done && probe.exit() && run::exit_status(*probe.exit()) == 0;
    if (!listening)
      return fail(DebugErrorKind::failure, "debugpy did not listen on the box's 127.0.0.1:" + std::to_string(request.port) +
                                               " within " + std::to_string(request.wait.count()) + " s; run " +
                                               launch.run_id + " stopped");
  }
  (void)client.remove(probe_started->id);

  // 4. The tunnel, and the configuration that points at it.
  remote::ForwardSpec forward;
  forward.kind = remote::ForwardKind::kLocal;
  forward.name = "debugpy";
  forward.local_port = request.local_port.value_or(request.port);
  forward.remote_host = "127.0.0.1";
  forward.remote_port = request.port;
  auto opened = tunnels.open_forward(forward);
  if (!opened)
    return fail(DebugErrorKind::failure, "cannot open the tunnel to debugpy: " + opened.error().message +
                                             (request.local_port ? "" : " (choose another local port with --local-port, 0 for any)"));
  launch.forward = *opened;
  AttachOptions attach = request.attach;
  attach.port = opened->bound_port;
  launch.mappings = std::move(*mappings);
  launch.configuration = vscode_attach_configuration(target.project, launch.mappings, attach);
  return launch;
}

}  // namespace ferry::debug

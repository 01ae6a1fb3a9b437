// `ferry debug`: run a script on the box under debugpy and hand the IDE a ready attach
// configuration (VS Code) through a local tunnel; `--pycharm PORT` instead opens the reverse
// tunnel PyCharm's debug server needs and prints the settrace line to paste.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "common/full_io.hpp"
#include "common/wakeup.hpp"
#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/relay_endpoint.hpp"
#include "helper/debug/attach_configuration.hpp"
#include "helper/debug/debug_launcher.hpp"
#include "helper/debug/debugpy_command.hpp"
#include "helper/debug/launch_json.hpp"
#include "helper/deploy/launch_target.hpp"
#include "helper/deploy/project_config.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/run/slurm_allocation.hpp"
#include "helper/run/interrupt_escalation.hpp"
#include "helper/run/launch_spec.hpp"
#include "helper/run/run_client.hpp"
#include "helper/run/run_exit.hpp"
#include "helper/run/run_follower.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/sync/mapping_target.hpp"

namespace ferry::cli {

namespace fs = std::filesystem;

namespace {

constexpr int kUsage = exit_status::kUsage;          // bad arguments, no project
constexpr int kNoDebugpy = exit_status::kAttention;  // debugpy is not importable on the box
constexpr int kFailure = exit_status::kFerryFailure; // ferry's own failures

struct DebugCliOptions {
  std::string launch;  // a ferry.json launch entry; `command` then holds extra args
  int port = debug::kDefaultDebugpyPort;
  std::optional<int> local_port;
  std::optional<int> pycharm;
  bool write_launch_json = false;
  bool legacy_type = false;
  bool all_code = false;
  bool no_sync = false;
  int wait_seconds = 30;
  std::string cwd;
  std::vector<std::string> env;
  std::vector<std::string> command;
};

void write_fd(int fd, std::string_view bytes) { (void)posix::write_full(fd, bytes.data(), bytes.size()); }

// The project, its first mapping's sync target and a connected endpoint for its host: the
// same resolution as `ferry sync` (with_sync_engines), kept here because debug needs the endpoint
// itself for runs and tunnels.
struct DebugLink {
  deploy::ProjectConfig project;
  sync::SyncTarget target;
  std::unique_ptr<remote::Endpoint> endpoint;
  // On a Slurm cluster: the allocation the debuggee runs in (a step, a run of `endpoint`'s), the
  // agent in it that the tunnel goes through (declared after `endpoint`: it goes first), and the
  // job ferry debug took for itself, released at the end.
  std::optional<run::SlurmJobInfo> allocation;
  std::unique_ptr<remote::JobEndpoint> node;
  std::string session_allocation;
  std::string first_remote_root;  // the first mapping's root on the box, absolute
  RelayEndpoint* live = nullptr;   // `endpoint` when it rides the project's live ferry
};

std::expected<DebugLink, int> connect_project(const GlobalOptions& g, deploy::ProjectConfig project) {
  DebugLink link;
  link.project = std::move(project);
  // Through the project's live ferry (no login of its own), but for a Slurm project: its debuggee
  // runs in an allocation this command may take, through the link's own SSH exec.
  if (!link.project.slurm)
    if (auto relay = relay_for(g, link.project)) {
      link.target = sync::mapping_target(link.project, link.project.mappings.front());
      link.first_remote_root = relay->mapping_root();
      link.live = relay.get();
      link.endpoint = std::move(relay);
      return link;
    }
  auto made = sync::make_project_endpoint(link.project, cli_endpoint_options(g));
  if (!made) {
    std::cerr << "ferry debug: " << made.error().message << "\n";
    return std::unexpected(kUsage);
  }
  if (!connect_cli_endpoint(*made, "ferry debug")) return std::unexpected(kFailure);
  link.endpoint = std::move(made->endpoint);
  link.target = made->target;
  link.first_remote_root = made->mapping_root;
  return link;
}

// The debuggee (or the PyCharm-mode script) followed to its end with output to our stdout and
// stderr; Ctrl-C escalates INT, TERM, KILL. Returns ferry's exit status.
int follow_to_end(run::RunClient& client, remote::Endpoint& endpoint, const std::string& id, platform::StopRequests& stop) {
  const bool reconnects = endpoint.reconnects();
  run::RunFollower follower(client, id, 0, [](const run::OutputRecord& rec) {
    write_fd(rec.stream == run::Stream::stdout_stream ? 1 : 2, rec.data);
  });
  run::InterruptEscalation escalation;
  for (;;) {
    follower.drain();
    if (follower.needs_attach()) (void)follower.attach();
    if (follower.finished() || follower.failed()) break;
    // Woken at least once a second to look at the link: an SSH link that dropped and came back
    // needs a re-attach at the next offset; a local agent that died never comes back.
    platform::Wakeup* wakeups[] = {&stop.wakeup(), &follower.wakeup()};
    platform::wait_any(wakeups, std::chrono::seconds(1));
    if (const bool up = endpoint.connected(); !up && !reconnects) {
      std::cerr << "ferry debug: lost the agent on " << endpoint.description() << "; run " << id
                << " goes on (`ferry attach " << id << "` follows it)\n";
      return kFailure;
    } else if (!up && !follower.link_down()) {
      follower.link_lost();
    } else if (up && follower.link_down()) {
      follower.link_restored();
    }
    if (const auto why = stop.take(); why == platform::StopKind::terminate) {
      // ferry itself is being stopped: end the run too. KILL, because debugpy waiting for its
      // client ignores SIGINT and SIGTERM, and nobody will attach once ferry is gone.
      (void)client.signal(id, "KILL");
      std::cerr << "ferry debug: stopping; sent SIGKILL to run " << id << "\n";
    } else if (why == platform::StopKind::interrupt) {
      auto step = escalation.next(id);
      (void)client.signal(id, step.signal, /*kill_on_disconnect=*/true);
      std::cerr << step.note << "\n";
    }
  }
  if (follower.failed() || !follower.exit()) {
    std::cerr << "ferry debug: lost run " << id << ": " << follower.failed().value_or("no exit status") << "\n";
    return kFailure;
  }
  return run::exit_status(*follower.exit());
}

debug::DebugTarget debug_target(const DebugLink& link) {
  return {link.project, link.target.remote_base, link.first_remote_root, link.allocation ? link.allocation->job_id : "",
          link.allocation ? run::first_node(link.allocation->nodes) : ""};
}

// Where the tunnel to debugpy opens: the agent in the allocation, else the project's link.
remote::Endpoint& tunnel_endpoint(DebugLink& link) {
  return link.node ? static_cast<remote::Endpoint&>(*link.node) : *link.endpoint;
}

debug::DebugRequest debug_request(const DebugCliOptions& o, platform::Wakeup* interrupt) {
  debug::DebugRequest r;
  r.command = o.command;
  r.port = o.port;
  r.local_port = o.local_port;
  r.env = o.env;
  r.cwd = o.cwd;
  r.wait = std::chrono::seconds(o.wait_seconds);
  r.attach.legacy_type = o.legacy_type;
  r.attach.just_my_code = !o.all_code;
  r.interrupt = interrupt;
  return r;
}

int flush_sync(DebugLink& link) {
  std::expected<sync::SyncSummary, ferry::Error> s;
  if (link.live) {  // the live ferry's push, on its warm index
    s = link.live->push_project(link.project.root);
  } else {
    sync::SyncEngine engine(*link.endpoint, link.target);
    sync::SyncOptions so;
    so.waiting = waiting_note("ferry debug");
    s = engine.push(so);
  }
  if (!s) {
    std::cerr << "ferry debug: sync failed: " << s.error().message << "\n";
    return kFailure;
  }
  for (const auto& c : s->conflicts) std::cerr << "ferry debug: sync conflict (not overwritten): " << c.path << "\n";
  if (!s->errors.empty()) std::cerr << "ferry debug: " << s->errors.size() << " files failed to sync; debugging anyway\n";
  return exit_status::kOk;
}

// --pycharm PORT: the box's 127.0.0.1:PORT reaches PyCharm's debug server here; an optional
// command runs (plainly, not under debugpy) while the tunnel is up.
int pycharm_mode(DebugLink& link, const DebugCliOptions& o) {
  remote::ForwardSpec spec;
  spec.kind = remote::ForwardKind::kReverse;
  spec.name = "pycharm";
  spec.remote_port = *o.pycharm;
  spec.local_port = o.local_port.value_or(*o.pycharm);
  auto forward = tunnel_endpoint(link).open_forward(spec);
  if (!forward) {
    std::cerr << "ferry debug: cannot open the reverse tunnel for port " << *o.pycharm << ": " << forward.error().message << "\n";
    return kFailure;
  }
  std::cerr << "PyCharm: run a \"Python Debug Server\" configuration on port " << spec.local_port
            << " (IDE host name: localhost) with the path mapping " << link.target.local_root.string() << " = "
            << link.first_remote_root << "\n"
            << "tunnel: " << remote::describe(*forward) << "\n"
            << "paste this where the remote code should connect (pip install pydevd-pycharm~=<your PyCharm build> on the box):\n";
  std::cout << debug::pycharm_settrace_line(*o.pycharm) << std::endl;

  // Ctrl-C, SIGTERM and SIGHUP (a closed terminal) alike: a debuggee left waiting for a client
  // nobody will bring would sit on the box forever.
  platform::StopRequests stop;
  int rc = 0;
  if (o.command.empty()) {
    std::cerr << "tunnel open; Ctrl-C closes it\n";
    platform::Wakeup* wakeups[] = {&stop.wakeup()};
    platform::wait_any(wakeups);
  } else {
    run::RunClient client(*link.endpoint);
    auto spec_run = debug::debug_run_spec(debug_target(link), debug_request(o, nullptr), o.command);
    if (!spec_run) {
      std::cerr << "ferry debug: " << spec_run.error() << "\n";
      rc = kUsage;
    } else if (auto started = client.start(*spec_run); !started) {
      std::cerr << "ferry debug: cannot start the run on " << link.endpoint->description() << ": " << started.error().message << "\n";
      rc = kFailure;
    } else {
      rc = follow_to_end(client, *link.endpoint, started->id, stop);
    }
  }
  (void)tunnel_endpoint(link).close_forward(forward->id);
  return rc;
}

int debugpy_mode(DebugLink& link, const DebugCliOptions& o) {
  run::RunClient client(*link.endpoint);
  platform::StopRequests stop;  // as in pycharm_mode
  auto launched = debug::launch_under_debugpy(tunnel_endpoint(link), client, debug_target(link), debug_request(o, &stop.wakeup()));
  if (!launched) {
    const auto& e = launched.error();
    switch (e.kind) {
      case debug::DebugErrorKind::usage: std::cerr << "ferry debug: " << e.message << "\n"; return kUsage;
      case debug::DebugErrorKind::no_debugpy: std::cerr << "ferry debug: " << e.message; return kNoDebugpy;
      case debug::DebugErrorKind::interrupted: std::cerr << "ferry debug: interrupted\n"; return exit_status::kInterrupted;
      case debug::DebugErrorKind::debuggee_ended: {
        // Show what it printed (why it ended), then say so.
        (void)follow_to_end(client, *link.endpoint, *e.run_id, stop);
        std::cerr << "ferry debug: " << e.message << "\n";
        return e.exit ? std::max(1, run::exit_status(*e.exit)) : kFailure;
      }
      case debug::DebugErrorKind::failure: std::cerr << "ferry debug: " << e.message << "\n"; return kFailure;
    }
  }
  spdlog::debug("debugpy {} on the box", launched->debugpy_version);
  const auto& configuration = launched->configuration;
  // launch.json before the configuration: once that is printed, everything is ready.
  if (o.write_launch_json) {
    debug::AttachOptions ao;
    ao.port = launched->forward.bound_port;
    ao.legacy_type = o.legacy_type;
    ao.just_my_code = !o.all_code;
    auto relative = debug::resolve_path_mappings(link.project, link.first_remote_root, /*workspace_relative=*/true);
    auto written = relative ? debug::write_launch_configuration(
                                  link.project.root, debug::vscode_attach_configuration(link.project, *relative, ao))
                            : std::unexpected(relative.error());
    if (!written) std::cerr << "ferry debug: " << written.error() << "\n";
    else
      std::cerr << (written->replaced ? "updated \"" : "added \"") << configuration["name"].get<std::string>() << "\" in "
                << written->path.string() << "\n";
  }
  std::cerr << debug::kReadyLinePrefix << "127.0.0.1:" << o.port << " (run " << launched->run_id << "); tunnel "
            << remote::describe(launched->forward) << "\nattach VS Code with this configuration:\n";
  std::cout << configuration.dump(2) << "\n" << std::flush;
  const int rc = follow_to_end(client, *link.endpoint, launched->run_id, stop);
  (void)tunnel_endpoint(link).close_forward(launched->forward.id);
  return rc;
}

// --launch NAME: the entry's command, cwd and env in place of the command line's (extra
// arguments appended, --cwd and --env still win).
std::expected<void, int> apply_launch(deploy::ProjectConfig& project, DebugCliOptions& o) {
  auto entry = deploy::find_launch(project, o.launch);
  auto resolved = entry ? deploy::launch_command(project, **entry, o.command, o.cwd) : std::unexpected(entry.error());
  if (!resolved) {
    std::cerr << "ferry debug: " << resolved.error() << "\n";
    return std::unexpected(kUsage);
  }
  o.command = std::move(resolved->command);
  o.cwd = std::move(resolved->cwd);
  project.env = std::move(resolved->env);
  return {};
}

// A Slurm project debugs on a compute node: inside `ferry alloc`'s allocation when there is one,
// else in one taken for this session (released when it ends). The debuggee is a step of it started
// by the login node's agent; the tunnel goes through an agent in the job, over the login link.
int enter_compute_node(DebugLink& link) {
  auto* ssh = dynamic_cast<remote::SshEndpoint*>(link.endpoint.get());
  if (!ssh) {
    std::cerr << "ferry debug: a Slurm project's host must be an SSH login node\n";
    return kUsage;
  }
  auto job = run::running_allocation(*ssh, link.project);
  if (!job) {
    std::cerr << "ferry debug: cannot ask Slurm for this project's allocation: " << job.error().message << "\n";
    return kFailure;
  }
  if (!*job) {
    platform::StopRequests stop;
    auto id = run::allocate(*ssh, link.project, *link.project.slurm);
    if (!id) {
      std::cerr << "ferry debug: " << id.error().message << "\n";
      return kFailure;
    }
    link.session_allocation = *id;
    std::cerr << "ferry: Slurm job " << *id << " submitted (a node for this debug session)\n";
    auto running = run::wait_running(
        *ssh, link.project, *id, [](const run::SlurmJobInfo& j) { std::cerr << "ferry: " << run::describe_allocation(j) << "\n"; },
        run::pause_on(stop.wakeup()));
    if (!running) {
      (void)run::release(*ssh, link.project, *id);
      std::cerr << "ferry debug: " << running.error().message << "\n";
      return running.error().code == protocol::error_code::kRequestCancelled ? exit_status::kInterrupted : kFailure;
    }
    *job = *running;
  }
  std::cerr << "ferry: debugging in " << run::describe_allocation(**job) << "\n";
  auto inside = run::open_allocation_endpoint(*ssh, link.project, **job);
  if (!inside) {
    std::cerr << "ferry debug: " << inside.error().message << "\n";
    if (!link.session_allocation.empty()) (void)run::release(*ssh, link.project, link.session_allocation);
    return kFailure;
  }
  link.allocation = **job;
  link.node = std::move(*inside);
  return 0;
}

int run_debug(const GlobalOptions& g, DebugCliOptions o) {
  if (!o.pycharm && o.command.empty() && o.launch.empty()) {
    std::cerr << "ferry debug: nothing to debug: ferry debug -- script.py ARGS, ferry debug --launch NAME "
                 "(or --pycharm PORT)\n";
    return kUsage;
  }
  auto project = cli_project_or_usage(g, "ferry debug");
  if (!project) return project.error();
  if (!o.launch.empty()) {
    if (auto applied = apply_launch(*project, o); !applied) return applied.error();
  }
  auto link = connect_project(g, std::move(*project));
  if (!link) return link.error();
  if (!o.no_sync) {
    if (int rc = flush_sync(*link); rc != 0) {
      link->endpoint->close();
      return rc;
    }
  }
  if (link->project.slurm) {
    if (int rc = enter_compute_node(*link); rc != 0) {
      link->endpoint->close();
      return rc;
    }
  }
  const int rc = o.pycharm ? pycharm_mode(*link, o) : debugpy_mode(*link, o);
  if (link->node) link->node->close();
  if (!link->session_allocation.empty()) {
    (void)run::release(*link->endpoint, link->project, link->session_allocation);
    std::cerr << "ferry debug: released Slurm job " << link->session_allocation << "\n";
  }
  link->endpoint->close();
  return rc;
}

}  // namespace

void add_debug_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<DebugCliOptions>();
  auto* cmd = app.add_subcommand("debug",
                                 "Run a script on the host under debugpy and print a VS Code attach configuration "
                                 "(or, with --pycharm PORT, tunnel PyCharm's debug server to the host)");
  cmd->add_option("--launch", o->launch,
                  "Debug ferry.json's launch entry NAME (kind debug or run; train entries: ferry train --launch); "
                  "arguments after -- are appended to its args, --cwd and --env win over its own");
  cmd->add_option("--port", o->port, "debugpy's port on the host (127.0.0.1 there)")->capture_default_str()
      ->check(CLI::Range(1, 65535));
  cmd->add_option("--local-port", o->local_port, "The tunnel's port here (default: the same as --port; 0: any free one)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--pycharm", o->pycharm, "PyCharm debug server port: open a reverse tunnel and print the settrace line")
      ->check(CLI::Range(1, 65535));
  cmd->add_flag("--write-launch-json", o->write_launch_json,
                "Also merge the configuration into .vscode/launch.json (other entries kept)");
  cmd->add_flag("--legacy-type", o->legacy_type, "\"type\": \"python\" for the older VS Code Python extension");
  cmd->add_flag("--all-code", o->all_code, "\"justMyCode\": false (step into libraries)");
  cmd->add_flag("--no-sync", o->no_sync, "Do not push the project first");
  cmd->add_option("--env", o->env, "K=V for the run (repeatable; wins over ferry.json env)");
  cmd->add_option("--cwd", o->cwd, "Working directory, relative to the mapping root");
  cmd->add_option("--wait", o->wait_seconds, "Seconds to wait for debugpy to listen")->capture_default_str()
      ->check(CLI::Range(1, 3600));
  cmd->add_option("command", o->command, "After --: the script and its arguments, or -m MODULE ...; with --launch, "
                                         "extra arguments");
  cmd->fallthrough();
  cmd->callback([&g, o] { g.exit_code = run_debug(g, *o); });
}

}  // namespace ferry::cli

// `ferry tunnel [-R] SPEC...`: opens port forwards to the project's host (or ferry.json's tunnels
// when no SPEC is given) and stays in the foreground until Ctrl-C, printing one line per tunnel on
// stdout; link drops and reconnects are reported on stderr, and the tunnels come back by themselves.
// On a short link its local tunnels go through the OpenSSH master from the first connection.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "common/wakeup.hpp"
#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/relay_endpoint.hpp"
#include "helper/deploy/project_config.hpp"
#include "helper/remote/endpoint_factory.hpp"
#include "helper/remote/forward_spec.hpp"
#include "helper/remote/job_endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "protocol/link_state.hpp"

namespace ferry::cli {
namespace {

struct TunnelOptions {
  std::vector<std::string> local_specs;
  std::vector<std::string> reverse_specs;
  std::string host;
  int timeout_s = 30;
  bool login_node = false;  // a Slurm project's tunnels to the login node even with an allocation
};

// The tunnels on the project's live ferry's link (a daemon, the editor's server): no login of
// this command's own; they close when it ends (its connection does), or when that ferry goes.
int tunnel_through(RelayEndpoint& relay, const std::vector<remote::ForwardSpec>& specs) {
  platform::StopRequests stop;
  auto gone = std::make_shared<platform::Wakeup>();
  relay.on_closed([gone](const std::string&) { gone->raise(); });
  std::vector<std::string> lines;
  for (const auto& spec : specs) {
    auto f = relay.open_forward(spec);
    if (!f) {
      std::cerr << "ferry tunnel: " << f.error().message << "\n";
      continue;
    }
    lines.push_back(remote::describe(*f) + (spec.name.empty() ? "" : "  (" + spec.name + ")"));
  }
  if (lines.empty()) return exit_status::kFailed;
  for (const auto& line : lines) std::cout << line << std::endl;
  std::cerr << "ferry: forwarding on " << relay.description() << "; Ctrl-C to stop\n";
  platform::Wakeup* waits[] = {&stop.wakeup(), gone.get()};
  const int woke = platform::wait_any(waits);
  relay.on_closed({});
  if (woke == 1) {
    std::cerr << "ferry tunnel: the live ferry (pid " << relay.pid() << ") went away; tunnels closed\n";
    return exit_status::kFailed;
  }
  std::cerr << "ferry: closing tunnels\n";
  return lines.size() == specs.size() ? 0 : 1;
}

int run_tunnel(const GlobalOptions& g, const TunnelOptions& o) {
  std::vector<remote::ForwardSpec> specs;
  for (const auto& text : o.local_specs) {
    auto s = remote::parse_forward_spec(text, remote::ForwardKind::kLocal);
    if (!s) {
      std::cerr << "ferry tunnel: " << s.error() << "\n";
      return exit_status::kUsage;
    }
    specs.push_back(*s);
  }
  for (const auto& text : o.reverse_specs) {
    auto s = remote::parse_forward_spec(text, remote::ForwardKind::kReverse);
    if (!s) {
      std::cerr << "ferry tunnel -R: " << s.error() << "\n";
      return exit_status::kUsage;
    }
    specs.push_back(*s);
  }
  // The project: its tunnels when no SPEC is given, and its Slurm allocation (not with --host).
  std::optional<deploy::ProjectConfig> project;
  std::error_code ec;
  std::filesystem::path start = g.project_dir ? std::filesystem::path(*g.project_dir) : std::filesystem::current_path(ec);
  if (auto file = deploy::find_project_file(start); file && (specs.empty() || o.host.empty())) {
    auto loaded = deploy::load_project(*file);
    if (!loaded) {
      std::cerr << "ferry tunnel: " << loaded.error().to_string() << "\n";
      return exit_status::kUsage;
    }
    if (auto admitted = admit_cli_project(g, *loaded); !admitted) {
      std::cerr << "ferry tunnel: " << admitted.error() << "\n";
      return exit_status::kUsage;
    }
    project = std::move(*loaded);
  }
  if (specs.empty()) {
    if (project)
      for (const auto& t : project->tunnels) specs.push_back(remote::forward_spec_from(t));
    if (specs.empty()) {
      std::cerr << "ferry tunnel: nothing to forward: give PORT, LPORT:HOST:RPORT or -R RPORT[:HOST:LPORT], or list "
                   "\"tunnels\" in ferry.json\n";
      return exit_status::kUsage;
    }
  }
  // The project's own host, a plain one (a Slurm node's tunnels need the allocation's agent).
  if (project && o.host.empty() && !project->slurm)
    if (auto relay = relay_for(g, *project)) return tunnel_through(*relay, specs);
  auto target = ssh_target(g, o.host, "");
  if (!target) {
    std::cerr << "ferry tunnel: " << target.error() << "\n";
    return exit_status::kUsage;
  }
  // Ctrl-C, SIGTERM or a closed terminal ends the wait below; taken from here on, so one that
  // comes during the connect ends the command as soon as the tunnels are up.
  platform::StopRequests stop;

  remote::SshEndpointOptions eo = endpoint_options(*target);
  eo.reconnect = true;
  // ssh -L's stand-in: on a short link every connection goes through the OpenSSH master (half
  // libssh2's CPU per byte), not only those after the tunnel's first 64 MiB.
  eo.openssh_tunnel_after_bytes = 0;
  eo.on_state = [](const remote::HostState& s) {
    using protocol::LinkState;
    const LinkState state = s.state;
    if (state == LinkState::connecting) std::cerr << "ferry: connecting to " << s.message << "\n";
    else if (state == LinkState::reconnecting)
      std::cerr << "ferry: link down" << (s.message.empty() ? "" : " (" + s.message + ")") << "; reconnecting"
                << (s.attempt ? " (attempt " + std::to_string(s.attempt) + ")" : "") << "\n";
    else if (state == LinkState::connected) std::cerr << "ferry: connected to " << s.message << "\n";
  };
  remote::SshEndpoint e(eo);
  auto info = e.connect(std::chrono::seconds(o.timeout_s));
  if (!info) {
    std::cerr << cannot_reach("ferry tunnel", e.description(), info.error()) << "\n";
    return exit_status::kFailed;
  }
  // A Slurm project's running allocation: the tunnels reach its node through an agent there.
  std::unique_ptr<remote::JobEndpoint> job;
  if (project && o.host.empty() && !o.login_node) {
    auto found = allocation_endpoint(e, *project);
    if (!found) {
      std::cerr << "ferry tunnel: " << found.error() << "\n";
      return exit_status::kFailed;
    }
    job = std::move(*found);
  }
  remote::Endpoint& where = job ? static_cast<remote::Endpoint&>(*job) : e;
  std::vector<std::string> lines;
  bool local = false;
  for (const auto& spec : specs) {
    auto f = where.open_forward(spec);
    if (!f) {
      std::cerr << "ferry tunnel: " << f.error().message << "\n";
      continue;
    }
    local = local || spec.kind == remote::ForwardKind::kLocal;
    lines.push_back(remote::describe(*f) + (spec.name.empty() ? "" : "  (" + spec.name + ")"));
  }
  if (lines.empty()) return exit_status::kFailed;
  // The tunnels are announced once the master is up (a second login, ~0.1 s here; ssh -L too
  // listens only after its login), so the first connection does not stay on libssh2 for its life.
  // A link that takes none (a long one, a ProxyJump host, no ssh client) answers at once; one
  // that does not come up in time leaves the connections on libssh2 until it does.
  if (local && !job && !e.wait_openssh_tunnels(std::chrono::seconds(std::clamp(o.timeout_s, 1, 10))))
    spdlog::debug("ferry tunnel: connections go over the link's libssh2 channels");
  for (const auto& line : lines) std::cout << line << std::endl;
  std::cerr << "ferry: forwarding; Ctrl-C to stop\n";
  platform::Wakeup* stop_wakeup[] = {&stop.wakeup()};
  if (!job) {
    platform::wait_any(stop_wakeup);
  } else {
    // The allocation can end under the tunnels (its time limit, a release): then they are gone.
    while (platform::wait_any(stop_wakeup, std::chrono::seconds(1)) < 0) {
      if (job->connected()) continue;
      std::cerr << "ferry tunnel: the agent in Slurm job " << job->target().job_id
                << " is gone (the allocation ended or was released); tunnels closed\n";
      job->close();
      e.close();
      return exit_status::kFailed;
    }
  }
  std::cerr << "ferry: closing tunnels\n";
  if (job) job->close();
  e.close();
  return lines.size() == specs.size() ? 0 : 1;
}

}  // namespace

void add_tunnel_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<TunnelOptions>();
  auto* cmd = app.add_subcommand("tunnel", "Forward ports to the host (ssh -L / -R) until Ctrl-C; listeners bind to 127.0.0.1 only");
  cmd->add_option("spec", o->local_specs,
                  "PORT, LPORT:HOST:RPORT or 127.0.0.1:LPORT:HOST:RPORT (local port -> HOST:RPORT on the host; LPORT 0 picks one). "
                  "None: ferry.json's tunnels");
  cmd->add_option("-R", o->reverse_specs, "RPORT[:HOST:LPORT]: the host's 127.0.0.1:RPORT -> HOST:LPORT here (repeatable)");
  cmd->add_option("--host", o->host, "ssh config alias or user@host:port (default: ferry.json's host)");
  cmd->add_flag("--login-node", o->login_node, "On a Slurm cluster: to the login node even while `ferry alloc` holds a node");
  cmd->add_option("--timeout", o->timeout_s, "Seconds to wait for the connection")->capture_default_str();
  cmd->fallthrough();
  cmd->callback([&g, o] { g.exit_code = run_tunnel(g, *o); });
}

}  // namespace ferry::cli

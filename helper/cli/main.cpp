// `ferry`: the CLI entry point. Sub-commands live in their own files (see commands.hpp).

#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "common/build_info.hpp"
#include "common/process_defaults.hpp"
#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/live_server.hpp"


int main(int argc, char** argv) {
  using namespace ferry::cli;
  // Stdout belongs to the protocol in `ferry serve`: every log line goes to stderr.
  spdlog::set_default_logger(spdlog::stderr_color_mt("ferry"));
  // No SIGPIPE, a heap that keeps freed buffers (common/process_defaults.hpp says why).
  ferry::platform::apply_process_defaults();

  CLI::App app{"ferry: edit locally, run on a remote GPU box.\n"
               "Sync, remote runs, tunnels, GPU monitoring and a LibTorch trainer behind one helper.",
               "ferry"};
  app.set_version_flag("--version", "ferry " + ferry::version_text());
  app.require_subcommand(1);
  app.footer(exit_status::kHelpText);
  // Global options work after the sub-command too (`ferry run -F FILE -- x.py`): sub-commands
  // made after this inherit it and hand options they do not know to the app.
  app.fallthrough();
  GlobalOptions g;
  app.add_option("--log-level", g.log_level, "Log level on stderr: trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--project", g.project_dir, "Project directory (default: walk up from the cwd to ferry.json)");
  app.add_option("-F", g.ssh_config, "OpenSSH client config file (default: ~/.ssh/config)");
  app.add_flag("--trust", g.trust, "Trust this project's ferry.json (recorded outside the repository; see ferry trust-project)");
  bool no_daemon = false;
  app.add_flag("--no-daemon", no_daemon,
               "Neither ride the project's live ferry (the editor's server, a daemon) nor leave a daemon: link by itself "
               "(as FERRY_NO_DAEMON=1)");
  app.parse_complete_callback([&] {
    spdlog::set_level(spdlog::level::from_str(g.log_level));
    if (no_daemon) turn_daemons_off();
  });

  add_init_command(app, g);
  add_serve_command(app, g);
  add_demo_command(app, g);
  add_connect_command(app, g);
  add_trust_command(app, g);
  add_trust_project_command(app, g);
  add_doctor_command(app, g);
  add_sync_command(app, g);
  add_pull_command(app, g);
  add_daemon_command(app, g);
  add_tunnel_command(app, g);
  add_alloc_command(app, g);
  add_train_command(app, g);
  add_debug_command(app, g);
  add_run_commands(app, g);
  add_watch_command(app, g);
  add_ide_command(app, g);
  add_env_command(app, g);
  add_cost_command(app, g);
  add_advise_command(app, g);
  add_autostop_command(app, g);
  add_gpu_command(app, g);
  add_spot_command(app, g);
  add_resume_command(app, g);
  add_completion_command(app, g);
  add_man_page_command(app, g);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "ferry: " << e.what() << "\n";
    return exit_status::kFailed;
  }
  return g.exit_code;
}

// The `ferry` sub-commands: each file in cli/ adds one to the CLI11 app.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "helper/deploy/project_config.hpp"
#include "helper/remote/endpoint_factory.hpp"
#include "helper/sync/project_endpoint.hpp"

namespace CLI {
class App;
}
namespace ferry::remote {
struct SshEndpointOptions;
class JobEndpoint;
}
namespace ferry::sync {
class SyncEngine;
struct SyncSummary;
struct SyncTarget;
}

namespace ferry::cli {

// Options every sub-command sees.
struct GlobalOptions {
  std::string log_level = "warn";          // spdlog level name; logs go to stderr only
  std::optional<std::string> project_dir;  // --project DIR; else walk up from cwd for ferry.json
  std::optional<std::string> ssh_config;   // -F FILE
  bool trust = false;                      // --trust: record that this project is trusted (docs/security.md)
  int exit_code = 0;                       // set by the sub-command's callback; main returns it
};

// Each returns nothing; the sub-command's callback sets the process exit status in g.exit_code.
void add_serve_command(CLI::App& app, GlobalOptions& g);
void add_init_command(CLI::App& app, GlobalOptions& g);
void add_demo_command(CLI::App& app, GlobalOptions& g);
void add_connect_command(CLI::App& app, GlobalOptions& g);
void add_trust_command(CLI::App& app, GlobalOptions& g);
void add_trust_project_command(CLI::App& app, GlobalOptions& g);  // trust_project_command.cpp
void add_doctor_command(CLI::App& app, GlobalOptions& g);
void add_sync_command(CLI::App& app, GlobalOptions& g);
void add_pull_command(CLI::App& app, GlobalOptions& g);
void add_daemon_command(CLI::App& app, GlobalOptions& g);  // daemon run|status|stop (daemon_command.cpp)
void add_tunnel_command(CLI::App& app, GlobalOptions& g);
void add_alloc_command(CLI::App& app, GlobalOptions& g);  // alloc (alloc_command.cpp)
void add_train_command(CLI::App& app, GlobalOptions& g);  // train_command.cpp
void add_debug_command(CLI::App& app, GlobalOptions& g);  // debug_command.cpp
void add_run_commands(CLI::App& app, GlobalOptions& g);  // run, runs, logs, attach, kill (run_command.cpp)
void add_watch_command(CLI::App& app, GlobalOptions& g);
void add_ide_command(CLI::App& app, GlobalOptions& g);  // ide pycharm, ide vscode (ide_command.cpp)
void add_env_command(CLI::App& app, GlobalOptions& g);  // env, env sync (env_command.cpp)
void add_cost_command(CLI::App& app, GlobalOptions& g);  // cost, cost catalog (cost_command.cpp)
void add_advise_command(CLI::App& app, GlobalOptions& g);  // advise (cost_command.cpp)
void add_autostop_command(CLI::App& app, GlobalOptions& g);  // autostop (autostop_command.cpp)
void add_gpu_command(CLI::App& app, GlobalOptions& g);  // gpu (gpu_command.cpp)
void add_spot_command(CLI::App& app, GlobalOptions& g);  // spot (spot_command.cpp)
void add_resume_command(CLI::App& app, GlobalOptions& g);  // resume (resume_command.cpp)
void add_completion_command(CLI::App& app, GlobalOptions& g);  // completion bash|zsh|fish (completion_command.cpp)
void add_man_page_command(CLI::App& app, GlobalOptions& g);  // man-page, hidden (completion_command.cpp)

// One mapping's engine in a sync command; engines[0] is the first mapping's.
struct MappingEngine {
  sync::SyncEngine* engine = nullptr;
  const sync::SyncTarget* target = nullptr;  // local root, excludes, protect, nested folders
  const deploy::Mapping* mapping = nullptr;  // as ferry.json writes it
};
using MappingsFn = std::function<int(const deploy::ProjectConfig&, std::vector<MappingEngine>&, const std::string& where)>;
// sync/pull/watch (defined in sync_command.cpp): runs `fn` with one engine per mapping of the
// project, all over its one endpoint (local sandbox or SSH), and the endpoint's description;
// returns fn's code. `prepare`, if given, runs on each engine (by index) while the endpoint
// connects (ferry sync walks the trees).
int with_sync_engines(const GlobalOptions& g, const std::string& who, const MappingsFn& fn,
                      const std::function<void(std::size_t, sync::SyncEngine&)>& prepare = {});
// For SyncOptions::cancelled in a one-shot command (ferry sync, ferry pull): the first Ctrl-C
// stops the sync after the requests in flight (also mid-listing, between its pages) and says so;
// a second one quits at once. Defined in sync_command.cpp.
std::function<bool()> stop_on_ctrl_c();
// A progress bar on stderr when it is a terminal (helper/cli/progress_bar.hpp), else empty.
std::function<void(std::uint64_t, std::uint64_t)> terminal_progress(const char* verb);
// Prints the one-line summary (or JSON); 0 ok, 1 errors, 3 conflicts or held deletes.
int print_summary(const sync::SyncSummary& s, bool as_json, const std::string& where);
// A push or pull answered by the project's live ferry serve (live_server.hpp) when one of this
// build is linked to the project (one mapping, trusted, no -F/--trust): its progress drawn as the
// bar, Ctrl-C sent on, the summary and exit status a sync's own. nullopt: do it here (sync_command.cpp).
struct LiveRequest {
  std::string who;     // "ferry sync", for messages
  const char* verb = "sync";  // the bar's
  std::string method;  // sync/push, sync/pull
  nlohmann::json params;  // without `path` (the project's is added)
  bool json = false;
  bool ask_held_deletes = false;  // a push: deletes the guard held are asked on the terminal
};
std::optional<int> ride_live_server(const GlobalOptions& g, const LiveRequest& r);
// After a command that made its own link: a daemon for the next one (daemon_command.cpp), unless
// something live serves the project already, daemons are off (FERRY_NO_DAEMON, idle time 0), -F
// is given, or the project has several mappings (which terminal commands do not ride yet).
void leave_daemon(const GlobalOptions& g);
// How long the project's daemon waits for a command: FERRY_DAEMON_IDLE (seconds), else ferry.json's
// daemon.idleMinutes, else 5 minutes.
std::chrono::seconds daemon_idle(const deploy::ProjectConfig& project);
// One mapping's summary, for print_summaries.
struct MappingSummary {
  const deploy::Mapping* mapping = nullptr;
  sync::SyncSummary summary;
};
// As print_summary for a project of one mapping; for a project of `several`, a line per mapping
// done ("LOCAL -> REMOTE: ...") or one JSON object: the total (paths prefixed with their mapping's
// folder) plus `mappings`, each done mapping's own summary with its `local` and `remote`. The
// status is the total's.
int print_summaries(const std::vector<MappingSummary>& done, bool several, bool as_json, const std::string& where);

// The SSH target of connect/trust/doctor: HOST from the command line, else ferry.json's; -F, else
// ferry.json's sshConfig (defined in connect_command.cpp).
using SshTarget = remote::SshTarget;  // helper/remote/endpoint_factory.hpp, shared with ferry serve
std::expected<SshTarget, std::string> ssh_target(const GlobalOptions& g, const std::string& host_arg,
                                                 const std::string& root_arg);

remote::SshEndpointOptions endpoint_options(const SshTarget& target);

// The project of a command (cli_project.cpp): --project, else walk up from `start`, else from
// the cwd; only a trusted one (admit_cli_project). The error is the line to print after "ferry CMD: ".
std::expected<deploy::ProjectConfig, std::string> find_cli_project(const GlobalOptions& g,
                                                                   const std::optional<std::filesystem::path>& start = {});
// find_cli_project, or the exit status 2 once `who: why` is on stderr.
std::expected<deploy::ProjectConfig, int> cli_project_or_usage(const GlobalOptions& g, const std::string& who);
// The same without the trust check, for commands that only read ferry.json (cost, advise).
std::expected<deploy::ProjectConfig, std::string> load_cli_project(const GlobalOptions& g,
                                                                   const std::optional<std::filesystem::path>& start = {});
// Project trust on the command line (docs/security.md): ok when the project is trusted; else with
// --trust, or a "y" on a terminal to the question, the decision is recorded; else the error is the
// line to print (and the command exits 2). find_cli_project calls it; commands that read ferry.json
// their own way call it before using the project.
std::expected<void, std::string> admit_cli_project(const GlobalOptions& g, const deploy::ProjectConfig& project);
// True when admit_cli_project let this project's root in earlier in this process: its trust record
// then matches (it was, or has just been written), and checking it again would read and hash the
// same files a second time on every riding command.
bool admitted_in_this_process(const deploy::ProjectConfig& project);
// For sync::make_project_endpoint: -F, --log-level for the local agent, the terminal's passphrase
// prompt, no reconnects (a command that follows a run turns them on).
sync::ProjectEndpointOptions cli_endpoint_options(const GlobalOptions& g);
// SyncOptions::waiting for a terminal: "WHO: waiting for ferry serve (pid N), which is syncing
// this project (your editor's sync on save); it goes on when that sync is done".
std::function<void(const std::string&)> waiting_note(const std::string& who);
// Connects; prints "WHO: cannot reach ...: why" and returns false when it cannot.
bool connect_cli_endpoint(sync::ProjectEndpoint& link, const std::string& who);
// Runs, tunnels and the debugger of a Slurm project go into its running allocation (`ferry alloc`)
// when it has one: an agent on the node, through `login`. Null when there is none (no slurm block,
// no SSH host, no running allocation); an error is a line to print after "WHO: ".
std::expected<std::unique_ptr<remote::JobEndpoint>, std::string> allocation_endpoint(remote::Endpoint& login,
                                                                                     const deploy::ProjectConfig& project);
// "WHO: cannot reach WHERE: WHY; NEXT STEP (ferry doctor checks each step)" for a failed connect
// (defined in connect_command.cpp).
std::string cannot_reach(const std::string& who, const std::string& where, const remote::ResponseError& error);

// Set by a sub-command's callback; main returns it.
}  // namespace ferry::cli

// `ferry daemon run|status|stop`, and the daemon a command leaves behind (helper/server/daemon.hpp,
// docs/daemon.md): after a `ferry sync` or `ferry pull` that had to make its own link, a daemon
// starts in the background and links the project, so the next command rides it (live_server.hpp)
// as ssh's ControlPersist master would serve the next ssh.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#ifndef _WIN32
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/build_info.hpp"
#include "common/private_files.hpp"
#include "common/wakeup.hpp"
#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/live_server.hpp"
#include "helper/deploy/project_trust.hpp"
#include "helper/server/server.hpp"
#include "helper/server/socket_client.hpp"

namespace ferry::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::chrono::seconds kDefaultIdle{300};
constexpr std::uintmax_t kMaxLogBytes = 1 << 20;

std::string duration_words(long long seconds) {
  if (seconds < 60) return std::to_string(seconds) + " s";
  return fmt::format("{} min {} s", seconds / 60, seconds % 60);
}

int run_daemon(const GlobalOptions& g, std::optional<long long> idle_arg) {
  auto project = find_cli_project(g);
  if (!project) {
    std::cerr << "ferry daemon: " << project.error() << "\n";
    return exit_status::kUsage;
  }
  const auto idle = idle_arg ? std::chrono::seconds(*idle_arg) : daemon_idle(*project);
  server::ServerOptions options;
  std::error_code ec;
  options.cwd = project->root;
  options.project_dir = project->root;
  if (g.ssh_config) options.ssh_config = fs::absolute(*g.ssh_config, ec).string();
  platform::StopRequests stops;  // SIGTERM, SIGHUP, Ctrl-C: close the link and go
  server::Server server(std::move(options));
  return server.serve_headless(idle, [&stops] { return stops.take() != platform::StopKind::none; });
}

// What `ferry daemon status` prints about the live process `hello` describes.
std::string describe(const json& hello, const fs::path& root) {
  const bool daemon = hello.value("daemon", false);
  std::string line = fmt::format("{} (pid {}) serves {}", daemon ? "ferry daemon" : "the editor's ferry serve",
                                 hello.value("pid", 0LL), root.string());
  line += hello.value("linked", false) ? ": linked, " + hello.value("endpoint", "") : ": not linked";
  if (hello.contains("idleSeconds"))
    line += "; exits after " + duration_words(hello["idleSeconds"].get<long long>()) + " without a command";
  if (hello.value("version", "") != ferry::version_text()) line += "; another build (" + hello.value("version", "") + ")";
  return line;
}

int daemon_status(const GlobalOptions& g, bool as_json) {
  auto project = load_cli_project(g);
  if (!project) {
    std::cerr << "ferry daemon status: " << project.error() << "\n";
    return exit_status::kUsage;
  }
  auto client = server::SocketClient::connect(project->root);
  auto hello = client ? client->call("ferry/hello", json{{"path", project->root.string()}}, {}, {}, std::chrono::seconds(5))
                      : std::unexpected(protocol::ResponseError{0, "", {}});
  if (as_json) {
    std::cout << (hello ? *hello : json{{"root", project->root.string()}, {"live", false}}).dump() << "\n";
  } else if (hello) {
    std::cout << describe(*hello, project->root) << "\n";
  } else {
    std::cout << "no live ferry serves " << project->root.string() << "\n";
  }
  return hello ? exit_status::kOk : exit_status::kFailed;
}

// Asks the daemon of `root` to stop and waits for its socket to go; false (and why) when it
// does not, or when the live process is an editor's.
std::expected<long long, std::string> stop_daemon(const fs::path& root) {
  auto client = server::SocketClient::connect(root);
  if (!client) return 0;
  auto hello = client->call("ferry/hello", json{{"path", root.string()}}, {}, {}, std::chrono::seconds(5));
  if (!hello) return std::unexpected(hello.error().message);
  const long long pid = hello->value("pid", 0LL);
  if (!hello->value("daemon", false))
    return std::unexpected(fmt::format("{} is served by the editor's ferry serve (pid {}), which ends with the editor", root.string(), pid));
  auto stopped = client->call("ferry/stop", json{{"why", "ferry daemon stop"}}, {}, {}, std::chrono::seconds(5));
  client.reset();
  // Without an answer it may still be going (it closed on us as it went): its socket says.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (server::SocketClient::connect(root)) {
    if (std::chrono::steady_clock::now() > deadline)
      return std::unexpected(stopped ? fmt::format("the daemon (pid {}) did not exit", pid) : stopped.error().message);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // its exit is no event here
  }
  return pid;
}

int daemon_stop(const GlobalOptions& g) {
  auto project = load_cli_project(g);
  if (!project) {
    std::cerr << "ferry daemon stop: " << project.error() << "\n";
    return exit_status::kUsage;
  }
  auto stopped = stop_daemon(project->root);
  if (!stopped) {
    std::cerr << "ferry daemon stop: " << stopped.error() << "\n";
    return exit_status::kFailed;
  }
  if (*stopped) std::cout << "stopped ferry daemon (pid " << *stopped << ") of " << project->root.string() << "\n";
  else std::cout << "no daemon serves " << project->root.string() << "\n";
  return exit_status::kOk;
}

#ifndef _WIN32
// `ferry --project ROOT daemon run` in a session of its own, detached (double fork: no zombie,
// no terminal), logging to .ferry/logs/daemon.log, holding no descriptor of this process (a lock
// held by a daemon forever would stall every sync).
void spawn_daemon(const fs::path& root) {
  const fs::path logs = root / ".ferry" / "logs";
  ferry::posix::make_private_dirs(logs);
  std::error_code ec;
  if (fs::file_size(logs / "daemon.log", ec) > kMaxLogBytes) fs::remove(logs / "daemon.log", ec);
  const std::string log = (logs / "daemon.log").string(), project = root.string();
  const pid_t child = ::fork();
  if (child < 0) return;
  if (child > 0) {
    int status = 0;
    ::waitpid(child, &status, 0);
    return;
  }
  ::setsid();
  if (::fork() != 0) ::_exit(0);
  const int in = ::open("/dev/null", O_RDONLY);
  const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (in < 0 || out < 0) ::_exit(1);
  ::dup2(in, 0);
  ::dup2(out, 1);
  ::dup2(out, 2);
  ::close_range(3, ~0U, 0);
  const char* argv[] = {"ferry", "--log-level", "info", "--project", project.c_str(), "daemon", "run", nullptr};
  ::execv("/proc/self/exe", const_cast<char* const*>(argv));
  ::_exit(127);
}
#endif

}  // namespace

std::chrono::seconds daemon_idle(const deploy::ProjectConfig& project) {
  if (const char* env = std::getenv("FERRY_DAEMON_IDLE"); env && *env) {
    char* end = nullptr;
    const long long seconds = std::strtoll(env, &end, 10);
    if (end && *end == '\0' && seconds >= 0) return std::chrono::seconds(seconds);
  }
  if (project.daemon_idle_minutes) return std::chrono::minutes(*project.daemon_idle_minutes);
  return kDefaultIdle;
}

void leave_daemon(const GlobalOptions& g) {
#ifndef _WIN32
  if (daemons_off() || g.ssh_config) return;
  auto project = load_cli_project(g);
  if (!project || project->mappings.size() != 1 || daemon_idle(*project).count() == 0) return;
  if (!deploy::TrustStore().check(*project).trusted()) return;  // nothing is written into an untrusted project
  if (auto client = server::SocketClient::connect(project->root)) {
    auto hello = client->call("ferry/hello", json{{"path", project->root.string()}}, {}, {}, std::chrono::seconds(2));
    // An old build's daemon is replaced; anything else live serves the next command already.
    if (!hello || hello->value("version", "") == ferry::version_text() || !hello->value("daemon", false)) return;
    client.reset();
    if (auto stopped = stop_daemon(project->root); !stopped) return;
  }
  spdlog::info("leaving a daemon for the next command of {}", project->root.string());
  spawn_daemon(project->root);
#else
  (void)g;  // no project socket on Windows yet
#endif
}

void add_daemon_command(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("daemon", "The background ferry that keeps a project's link warm between terminal commands");
  cmd->require_subcommand(1);
  cmd->footer("After a `ferry sync` or `ferry pull` that made its own SSH link, a daemon starts in the background and\n"
              "keeps the link, the agent and the file index, so the next command starts at once (no login). It exits\n"
              "after 5 idle minutes (ferry.json \"daemon\": {\"idleMinutes\": N}, 0 for none; FERRY_DAEMON_IDLE=SECONDS;\n"
              "FERRY_NO_DAEMON=1 turns daemons off), and hands the project over when an editor's ferry serve opens it.");
  auto idle = std::make_shared<std::optional<long long>>();
  auto* run = cmd->add_subcommand("run", "Serve the project in the foreground (what the background daemon runs)");
  run->add_option("--idle", *idle, "Seconds without a command before it exits")->check(CLI::NonNegativeNumber);
  run->callback([&g, idle] { g.exit_code = run_daemon(g, *idle); });
  auto as_json = std::make_shared<bool>(false);
  auto* status = cmd->add_subcommand("status", "Which ferry serves the project now: a daemon or the editor's, its link and idle time");
  status->add_flag("--json", *as_json, "Print ferry/hello's answer as JSON");
  status->callback([&g, as_json] { g.exit_code = daemon_status(g, *as_json); });
  cmd->add_subcommand("stop", "Stop the project's daemon (its link closes; runs on the box go on)")->callback([&g] {
    g.exit_code = daemon_stop(g);
  });
}

}  // namespace ferry::cli

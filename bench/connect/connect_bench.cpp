// bench/connect: time from nothing to a ready ferry-agent over SSH (cold: the agent is installed
// over SFTP first; warm: it is already there) against `ssh -F cfg alias true`, OpenSSH's own
// connect + auth + one remote command, on the same loopback sshd. Then a command's round trip once
// a link is warm: `ferry run -- true` riding the project's daemon (and alone) against
// `ssh alias true` through an OpenSSH ControlMaster socket. Prints medians and ratios.
//   bench_connect [RUNS]    (default 10; FERRY_BENCH_ONLY=run: the round trip only)
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "ferry/version.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "tests/integration/sshd_fixture.hpp"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double median_ms(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::vector<double> time_runs(int runs, const std::function<void()>& before, const std::function<bool()>& body) {
  std::vector<double> out;
  for (int i = 0; i < runs; ++i) {
    before();
    auto t0 = Clock::now();
    if (!body()) {
      std::cerr << "bench_connect: a run failed\n";
      std::exit(1);
    }
    out.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return out;
}

bool run_program(const char* path, const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, path, &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return false;
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool run_ssh(const std::vector<std::string>& argv) { return run_program("/usr/bin/ssh", argv); }

// A command's round trip on a warm link: `ferry run -- true` riding the daemon a first `ferry sync`
// left (and alone, FERRY_NO_DAEMON=1), against `ssh alias true` through a ControlMaster socket.
void command_round_trip(ferry::test::SshdFixture& f, int runs) {
  const fs::path project = fs::temp_directory_path() / ("ferry-bench-run-" + std::to_string(::getpid()));
  fs::remove_all(project);
  fs::create_directories(project);
  {
    std::FILE* out = std::fopen((project / "ferry.json").c_str(), "w");
    std::fprintf(out, "{\"name\": \"bench-run\", \"host\": \"%s\", \"sshConfig\": \"%s\", \"mappings\": [{\"local\": \".\", \"remote\": \"~/bench-run\"}]}\n",
                 f.alias().c_str(), f.ssh_config().c_str());
    std::fclose(out);
  }
  const std::vector<std::string> run{"ferry", "--project", project.string(), "run", "--", "true"};
  const auto ferry_ok = [](const std::vector<std::string>& argv) { return run_program(FERRY_PATH, argv); };
  ::setenv("FERRY_NO_DAEMON", "1", 1);
  ferry_ok(run);  // installs the agent, syncs the project
  auto alone = time_runs(runs, [] {}, [&] { return ferry_ok(run); });
  ::unsetenv("FERRY_NO_DAEMON");
  ferry_ok({"ferry", "--project", project.string(), "sync"});  // leaves the daemon
  const std::vector<std::string> linked{"sh", "-c", "\"$0\" --project \"$1\" daemon status --json | grep -q '\"linked\": *true'",
                                        FERRY_PATH, project.string()};
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (!run_program("/bin/sh", linked)) {
    if (Clock::now() > deadline) {
      std::cerr << "bench_connect: no daemon linked within 60 s\n";
      std::exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto riding = time_runs(runs, [] {}, [&] { return ferry_ok(run); });
  // Where the riding run's time goes: the process alone, and one relayed agent call.
  auto start = time_runs(runs, [] {}, [&] { return ferry_ok({"ferry", "--version"}); });
  auto listed = time_runs(runs, [] {}, [&] { return ferry_ok({"ferry", "--project", project.string(), "runs"}); });
  ferry_ok({"ferry", "--project", project.string(), "daemon", "stop"});

  const std::string control = (project.parent_path() / ("ferry-bench-cm-" + std::to_string(::getpid()))).string();
  run_ssh({"ssh", "-F", f.ssh_config().string(), "-o", "ControlPath=" + control, "-o", "ControlMaster=yes", "-o",
           "ControlPersist=300", "-fN", f.alias()});
  std::vector<std::string> ssh{"ssh", "-F", f.ssh_config().string(), "-o", "ControlPath=" + control, "-o", "BatchMode=yes", f.alias(), "true"};
  auto master = time_runs(runs, [] {}, [&] { return run_ssh(ssh); });
  run_ssh({"ssh", "-F", f.ssh_config().string(), "-o", "ControlPath=" + control, "-O", "exit", f.alias()});
  fs::remove_all(project);

  double r = median_ms(riding), a = median_ms(alone), m = median_ms(master);
  std::printf("%-44s %9.1f ms\n", "ferry run -- true, riding the daemon", r);
  std::printf("%-44s %9.1f ms\n", "ferry run -- true, alone (FERRY_NO_DAEMON=1)", a);
  std::printf("%-44s %9.1f ms\n", "  of which: ferry --version (process start)", median_ms(start));
  std::printf("%-44s %9.1f ms\n", "  ferry runs, riding (one relayed call)", median_ms(listed));
  std::printf("%-44s %9.1f ms\n", "ssh alias true over a ControlMaster", m);
  std::printf("ratios: riding/ssh-master %.2f (target <= 0.5)  alone/ssh-master %.2f\n", r / m, a / m);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 10;
  ferry::test::SshdFixture f;
  f.trust_host_key();
  // FERRY_BENCH_ONLY=run: only the command round trip.
  const char* only = std::getenv("FERRY_BENCH_ONLY");
  if (only && std::string(only) == "run") {
    command_round_trip(f, runs);
    return 0;
  }
  auto options = [&] {
    ferry::remote::SshEndpointOptions o;
    o.host = f.alias();
    o.ssh_config = f.ssh_config().string();
    o.remote_root = "~/bench";
    o.agent_binary = FERRY_AGENT_PATH;
    o.session.agent_socket = "";
    o.reconnect = false;
    o.on_state = [](const ferry::remote::HostState&) {};
    return o;
  };
  // Timed: connect until the agent answers a ping. The previous endpoint closes outside the timing.
  std::unique_ptr<ferry::remote::SshEndpoint> e;
  auto connect = [&] {
    e = std::make_unique<ferry::remote::SshEndpoint>(options());
    return e->connect(std::chrono::seconds(30)).has_value() && e->call("agent/ping", nlohmann::json::object()).has_value();
  };
  fs::path agent_dir = f.home() / ".cache/ferry/agent";
  auto cold = time_runs(runs, [&] { e.reset(); fs::remove_all(agent_dir); }, connect);
  auto warm = time_runs(runs, [&] { e.reset(); }, connect);
  e.reset();
  std::vector<std::string> ssh{"ssh", "-F", f.ssh_config().string(), "-o", "BatchMode=yes", f.alias(), "true"};
  auto openssh = time_runs(runs, [] {}, [&] { return run_ssh(ssh); });
  // What a plain-ssh workflow pays to reach a running agent: connect and exec it once.
  std::string agent = (agent_dir / ferry::kVersion / "ferry-agent").string();
  std::vector<std::string> ssh_agent{"ssh", "-F", f.ssh_config().string(), "-o", "BatchMode=yes", f.alias(), agent, "--version"};
  auto openssh_agent = time_runs(runs, [] {}, [&] { return run_ssh(ssh_agent); });

  double c = median_ms(cold), w = median_ms(warm), s = median_ms(openssh), sa = median_ms(openssh_agent);
  std::printf("runs per row: %d (median ms), loopback sshd, agent %.1f MiB\n", runs,
              fs::file_size(FERRY_AGENT_PATH) / 1048576.0);
  std::printf("%-44s %9.1f ms\n", "ferry cold (install + handshake + ping)", c);
  std::printf("%-44s %9.1f ms\n", "ferry warm (hash check + handshake + ping)", w);
  std::printf("%-44s %9.1f ms\n", "ssh -F cfg alias true", s);
  std::printf("%-44s %9.1f ms\n", "ssh -F cfg alias ferry-agent --version", sa);
  std::printf("ratios: cold/ssh %.2f  warm/ssh %.2f  warm/ssh-agent %.2f\n", c / s, w / s, w / sa);
  command_round_trip(f, runs);
  return 0;
}

// bench/connect: time from nothing to a ready ferry-agent over SSH (cold: the agent is installed
// over SFTP first; warm: it is already there) against `ssh -F cfg alias true`, OpenSSH's own
// connect + auth + one remote command, on the same loopback sshd. Prints medians and ratios.
//   bench_connect [RUNS]    (default 10)
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
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

bool run_ssh(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, "/usr/bin/ssh", &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return false;
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 10;
  ferry::test::SshdFixture f;
  f.trust_host_key();
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
  return 0;
}

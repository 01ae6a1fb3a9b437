// bench/tunnel: throughput (1 and 8 streams, upload to a discard server and download from a source
// server) and latency (sequential small echo round trips) through a ferry local tunnel vs `ssh -L`
// on the same loopback sshd, with ssh's default cipher and with aes128-ctr + hmac-sha2-256 (what
// libssh2 1.10 can negotiate). The ferry tunnel is a `ferry tunnel` process, as ssh -L is its own
// process; the ratios compare those. A last row runs the same forward inside this process (what
// `ferry serve` does), for reference. Payloads are generated in memory. Measured in interleaved
// rounds (FERRY_BENCH_ROUNDS); ratios are the median of the rounds' ratios, with their range.
// `bench_tunnel MIB ECHOES slurm` measures a Slurm compute node's tunnels instead (slurm_bench).
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <thread>
#include <vector>

#include "helper/remote/ssh_endpoint.hpp"
#include <nlohmann/json.hpp>

#include "tests/integration/endpoint_options.hpp"
#include "tests/integration/slurm_fixture.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tcp_peers.hpp"

using namespace ferry;
using namespace ferry::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// The "remote" servers: discard (reads to EOF, answers the byte count), source (sends the count
// it is asked for), echo. One thread per connection.
class BenchServer {
 public:
  enum class Kind { kDiscard, kSource, kEcho };
  explicit BenchServer(Kind kind) : kind_(kind) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 128);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    std::thread([this] {
      for (;;) {
        int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        std::thread([this, c] { serve(c); }).detach();
      }
    }).detach();
  }
  int port() const { return port_; }

 private:
  void serve(int c) {
    int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::vector<char> buf(256 << 10);
    if (kind_ == Kind::kDiscard) {
      std::uint64_t total = 0;
      for (ssize_t n; (n = ::recv(c, buf.data(), buf.size(), 0)) > 0;) total += static_cast<std::uint64_t>(n);
      write_all_fd(c, std::string_view(reinterpret_cast<char*>(&total), 8));
    } else if (kind_ == Kind::kSource) {
      std::uint64_t want = 0;
      try {
        auto got = read_exactly(c, 8, 60s);
        std::memcpy(&want, got.data(), 8);
      } catch (const std::exception&) {
        want = 0;  // a readiness probe (wait_for_port) connects and closes at once
      }
      std::fill(buf.begin(), buf.end(), 'x');
      while (want > 0) {
        auto n = std::min<std::uint64_t>(want, buf.size());
        if (!write_all_fd(c, std::string_view(buf.data(), n))) break;
        want -= n;
      }
    } else {
      for (ssize_t n; (n = ::recv(c, buf.data(), buf.size(), 0)) > 0;)
        if (!write_all_fd(c, std::string_view(buf.data(), static_cast<std::size_t>(n)))) break;
    }
    ::shutdown(c, SHUT_WR);
    while (::recv(c, buf.data(), buf.size(), 0) > 0) {
    }
    ::close(c);
  }
  Kind kind_;
  int fd_ = -1;
  int port_ = 0;
};

double upload(int port, std::uint64_t bytes) {
  int fd = tcp_connect("127.0.0.1", port);
  if (fd < 0) throw std::runtime_error("upload: connect failed");
  std::string chunk(256 << 10, 'u');
  auto t0 = Clock::now();
  for (std::uint64_t left = bytes; left > 0;) {
    auto n = std::min<std::uint64_t>(left, chunk.size());
    if (!write_all_fd(fd, std::string_view(chunk.data(), n))) throw std::runtime_error("upload: write failed");
    left -= n;
  }
  ::shutdown(fd, SHUT_WR);
  auto reply = read_exactly(fd, 8, 300s);
  auto secs = std::chrono::duration<double>(Clock::now() - t0).count();
  ::close(fd);
  std::uint64_t got = 0;
  std::memcpy(&got, reply.data(), 8);
  if (got != bytes) throw std::runtime_error("upload: the server counted " + std::to_string(got));
  return secs;
}

double download(int port, std::uint64_t bytes) {
  int fd = tcp_connect("127.0.0.1", port);
  if (fd < 0) throw std::runtime_error("download: connect failed");
  auto t0 = Clock::now();
  write_all_fd(fd, std::string_view(reinterpret_cast<char*>(&bytes), 8));
  std::vector<char> buf(256 << 10);
  std::uint64_t total = 0;
  for (ssize_t n; (n = ::recv(fd, buf.data(), buf.size(), 0)) > 0;) total += static_cast<std::uint64_t>(n);
  auto secs = std::chrono::duration<double>(Clock::now() - t0).count();
  ::close(fd);
  if (total != bytes) throw std::runtime_error("download: got " + std::to_string(total));
  return secs;
}

// MB/s (10^6) over `streams` parallel transfers of `bytes` each, wall clock.
double throughput(int port, int streams, std::uint64_t bytes, bool up) {
  auto t0 = Clock::now();
  std::vector<std::future<double>> all;
  for (int i = 0; i < streams; ++i)
    all.push_back(std::async(std::launch::async, [=] { return up ? upload(port, bytes) : download(port, bytes); }));
  for (auto& f : all) f.get();
  auto secs = std::chrono::duration<double>(Clock::now() - t0).count();
  return static_cast<double>(bytes) * streams / secs / 1e6;
}

// Median round trip in microseconds over `n` sequential 64-byte echoes on one connection.
double latency_us(int port, int n) {
  int fd = tcp_connect("127.0.0.1", port);
  if (fd < 0) throw std::runtime_error("echo: connect failed");
  std::string msg(64, 'e');
  std::vector<double> rtts;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    write_all_fd(fd, msg);
    read_exactly(fd, msg.size(), 30s);
    rtts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  ::close(fd);
  std::sort(rtts.begin(), rtts.end());
  return rtts[rtts.size() / 2];
}

// CPU seconds (user + system, all threads) a process has used so far; 0 for pid <= 0.
double cpu_seconds(pid_t pid) {
  if (pid <= 0) return 0;
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return 0;
  char buf[1024];
  std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces
  unsigned long utime = 0, stime = 0;
  if (!p || std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2) return 0;
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// The process's CPU plus that of its live children: a ferry tunnel's OpenSSH master is one.
double cpu_of_tree(pid_t pid) {
  double total = cpu_seconds(pid);
  if (pid <= 0) return total;
  for (auto& t : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream children(t.path() / "children");
    for (pid_t c; children >> c;) total += cpu_seconds(c);
  }
  return total;
}

// OpenSSH tunnel masters listening now (their control sockets, in ferry's private lane dirs).
int tunnel_masters_listening() {
  std::ifstream unix_sockets("/proc/net/unix");
  int n = 0;
  for (std::string line; std::getline(unix_sockets, line);)
    n += line.find("/ferry-lane-") != std::string::npos && line.find("/mux") != std::string::npos;
  return n;
}

// `ssh -N -L` in the background; killed at scope end.
struct SshForward {
  pid_t pid = -1;
  int port = 0;
  SshForward(const SshdFixture& f, int target, const std::vector<std::string>& extra) {
    port = pick_free_port();
    std::vector<std::string> argv{"/usr/bin/ssh", "-F", f.ssh_config().string(), "-N", "-o", "ExitOnForwardFailure=yes",
                                  "-L", "127.0.0.1:" + std::to_string(port) + ":127.0.0.1:" + std::to_string(target)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(f.alias());
    pid = ::fork();
    if (pid == 0) {
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    if (!wait_for_port(port, 10s)) throw std::runtime_error("ssh -L did not start listening");
  }
  ~SshForward() {
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
  }
};

// In a forked child: becomes `ferry ARGS...` (args[0] is FERRY_BIN) in `cwd`, with this build's agent.
[[noreturn]] void exec_ferry(const std::filesystem::path& cwd, std::vector<std::string>& args) {
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
  if (::chdir(cwd.c_str()) != 0) ::_exit(126);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(FERRY_BIN, argv.data());
  ::_exit(127);
}

// `ferry ARGS...` (a `ferry tunnel` as a user runs it) in `cwd`, in its own process like ssh -L; the
// chosen port comes from its first stdout line ("127.0.0.1:PORT → remote ..."). Killed at scope end.
struct FerryTunnel {
  pid_t pid = -1;
  int port = 0;
  FerryTunnel(const std::filesystem::path& cwd, std::vector<std::string> args) {
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("pipe failed");
    args.insert(args.begin(), FERRY_BIN);
    pid = ::fork();
    if (pid == 0) {
      ::signal(SIGINT, SIG_DFL);  // a bench started in the background inherits SIGINT ignored; the destructor sends it
      ::dup2(out[1], 1);
      ::close(out[0]);
      exec_ferry(cwd, args);
    }
    ::close(out[1]);
    std::string line;
    char c = 0;
    pollfd p{out[0], POLLIN, 0};
    auto deadline = Clock::now() + 90s;
    while (Clock::now() < deadline && (line.empty() || line.back() != '\n')) {
      if (::poll(&p, 1, 1000) <= 0) continue;
      if (::read(out[0], &c, 1) != 1) break;
      line += c;
    }
    ::close(out[0]);
    auto colon = line.find(':'), space = line.find(' ');
    if (line.rfind("127.0.0.1:", 0) != 0 || colon == std::string::npos || space == std::string::npos)
      throw std::runtime_error("ferry tunnel did not start: " + line);
    port = std::stoi(line.substr(colon + 1, space - colon - 1));
  }
  // `ferry tunnel --host` to the fixture's sshd, from a folder with no ferry.json above.
  FerryTunnel(const SshdFixture& f, int target)
      : FerryTunnel(f.dir(), {"-F", f.ssh_config().string(), "tunnel", "--host", f.alias(), "0:127.0.0.1:" + std::to_string(target)}) {}
  ~FerryTunnel() {
    ::kill(pid, SIGINT);  // Ctrl-C: closes the tunnel and exits
    ::waitpid(pid, nullptr, 0);
  }
};

// One forwarding path under measurement: its local ports to the discard, source and echo servers.
struct Path {
  std::string name;
  int up = 0, down = 0, echo = 0;
  pid_t up_pid = 0, down_pid = 0;  // the forwarding processes (none for the in-process path)
  std::vector<double> up1, up8, down1, down8, rtt;
  double cpu[4] = {0, 0, 0, 0};  // CPU seconds the forwarding process spent on up1, up8, down1, down8
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Every path is open at once and measured in rounds, each round taking each metric on every path
// back to back, in a rotated order: the paths share whatever state the machine is in (a 2-core VM
// drifts by tens of percent over a minute), so the ratios compare like with like.
void measure(std::vector<Path>& paths, std::uint64_t per_round, int echoes_per_round, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::size_t> order(paths.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = (i + static_cast<std::size_t>(round)) % paths.size();
    auto timed = [&](Path& p, int metric, int streams, bool up) {
      const pid_t pid = up ? p.up_pid : p.down_pid;
      const double cpu0 = cpu_of_tree(pid);
      const double mbps = throughput(up ? p.up : p.down, streams, per_round, up);
      p.cpu[metric] += cpu_of_tree(pid) - cpu0;
      return mbps;
    };
    for (std::size_t i : order) paths[i].up1.push_back(timed(paths[i], 0, 1, true));
    for (std::size_t i : order) paths[i].up8.push_back(timed(paths[i], 1, 8, true));
    for (std::size_t i : order) paths[i].down1.push_back(timed(paths[i], 2, 1, false));
    for (std::size_t i : order) paths[i].down8.push_back(timed(paths[i], 3, 8, false));
    for (std::size_t i : order) paths[i].rtt.push_back(latency_us(paths[i].echo, echoes_per_round));
    std::fprintf(stderr, "round %d of %d done\n", round + 1, rounds);
  }
}

// The tables: every path's medians, paths[0]'s ratios against paths 1 .. compared-1, and the
// forwarding processes' CPU per GB for those.
void print_results(const std::vector<Path>& paths, std::size_t compared, std::uint64_t per_round, int echoes_per_round, int rounds) {
  std::printf("%d rounds of %llu MiB per stream and %d echoes per path, medians\n\n", rounds,
              static_cast<unsigned long long>(per_round >> 20), echoes_per_round);
  std::printf("| path | upload 1 stream MB/s | upload 8 streams MB/s | download 1 stream MB/s | download 8 streams MB/s | echo RTT median us |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const auto& p : paths)
    std::printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", p.name.c_str(), median(p.up1), median(p.up8), median(p.down1),
                median(p.down8), median(p.rtt));
  std::printf("\nratios %s / each, median of the rounds' ratios (lowest-highest) (throughput: higher is better, target >= 0.8;"
              " latency: lower is better, target <= 1.2)\n\n", paths[0].name.c_str());
  std::printf("| vs | upload 1 | upload 8 | download 1 | download 8 | latency |\n|---|---|---|---|---|---|\n");
  auto ratio = [&](const std::vector<double>& ours, const std::vector<double>& theirs) {
    std::vector<double> r;
    for (std::size_t k = 0; k < ours.size(); ++k) r.push_back(ours[k] / theirs[k]);
    const auto [lo, hi] = std::minmax_element(r.begin(), r.end());
    char out[64];
    std::snprintf(out, sizeof out, "%.2f (%.2f-%.2f)", median(r), *lo, *hi);
    return std::string(out);
  };
  for (std::size_t i = 1; i < compared; ++i)
    std::printf("| %s | %s | %s | %s | %s | %s |\n", paths[i].name.c_str(), ratio(paths[0].up1, paths[i].up1).c_str(),
                ratio(paths[0].up8, paths[i].up8).c_str(), ratio(paths[0].down1, paths[i].down1).c_str(),
                ratio(paths[0].down8, paths[i].down8).c_str(), ratio(paths[0].rtt, paths[i].rtt).c_str());
  // CPU per byte of the forwarding process: unlike throughput on a busy 2-core box it hardly
  // moves between runs, and it is what a throughput gap comes from.
  std::printf("\nCPU of the forwarding process and its children per GB moved (s; /proc/PID/stat, all rounds)\n\n");
  std::printf("| path | upload 1 | upload 8 | download 1 | download 8 |\n|---|---|---|---|---|\n");
  const double gb_one = static_cast<double>(per_round) * rounds / 1e9;
  for (std::size_t i = 0; i < compared; ++i)
    std::printf("| %s | %.2f | %.2f | %.2f | %.2f |\n", paths[i].name.c_str(), paths[i].cpu[0] / gb_one,
                paths[i].cpu[1] / (8 * gb_one), paths[i].cpu[2] / gb_one, paths[i].cpu[3] / (8 * gb_one));
}

struct Rounds {
  std::uint64_t per_round;
  int echoes;
  int rounds;
};

Rounds rounds_for(std::uint64_t bytes, int echoes) {
  const int rounds = std::getenv("FERRY_BENCH_ROUNDS") ? std::max(1, std::atoi(std::getenv("FERRY_BENCH_ROUNDS"))) : 3;
  return {std::max<std::uint64_t>(bytes / static_cast<std::uint64_t>(rounds), 1u << 20), std::max(1, echoes / rounds), rounds};
}

// ferry tunnel (its own process, and in this process) against ssh -L on one loopback sshd.
int ssh_bench(std::uint64_t bytes, int echoes) {
  SshdFixture sshd;
  sshd.trust_host_key();
  BenchServer discard(BenchServer::Kind::kDiscard), source(BenchServer::Kind::kSource), echo(BenchServer::Kind::kEcho);

  remote::SshEndpoint e(endpoint_options_for(sshd));
  if (auto info = e.connect(30s); !info) {
    std::cerr << "connect: " << info.error().message << "\n";
    return 1;
  }
  auto open = [&](int target) {
    remote::ForwardSpec s;
    s.remote_host = "127.0.0.1";
    s.remote_port = target;
    auto f = e.open_forward(s);
    if (!f) throw std::runtime_error(f.error().message);
    return f->bound_port;
  };
  std::vector<Path> paths;
  auto add = [&](std::string name, int up, int down, int echo_port, pid_t up_pid = 0, pid_t down_pid = 0) {
    paths.push_back(Path{std::move(name), up, down, echo_port, up_pid, down_pid});
  };
  FerryTunnel fa(sshd, discard.port()), fb(sshd, source.port()), fc(sshd, echo.port());
  add("ferry tunnel", fa.port, fb.port, fc.port, fa.pid, fb.pid);
  // On a short link `ferry tunnel` announces its tunnels once its OpenSSH master is up, so every
  // connection measured goes through it; FERRY_OPENSSH_TUNNELS=0 in the environment keeps them on
  // libssh2 for comparison.
  const char* forced = std::getenv("FERRY_OPENSSH_TUNNELS");
  if (!forced || std::string(forced) != "0")
    std::fprintf(stderr, "OpenSSH tunnel masters listening: %d of 3\n", tunnel_masters_listening());
  SshForward da(sshd, discard.port(), {}), db(sshd, source.port(), {}), dc(sshd, echo.port(), {});
  add("ssh -L (default cipher)", da.port, db.port, dc.port, da.pid, db.pid);
  const std::vector<std::string> ctr{"-c", "aes128-ctr", "-m", "hmac-sha2-256"};
  SshForward ca(sshd, discard.port(), ctr), cb(sshd, source.port(), ctr), cc(sshd, echo.port(), ctr);
  add("ssh -L -c aes128-ctr -m hmac-sha2-256", ca.port, cb.port, cc.port, ca.pid, cb.pid);
  // The same forwards inside this process (SshEndpoint::open_forward, what `ferry serve` runs),
  // sharing its cores with the clients and servers: shown, not used for the ratios.
  add("ferry forward in the bench process", open(discard.port()), open(source.port()), open(echo.port()));
  const Rounds r = rounds_for(bytes, echoes);
  measure(paths, r.per_round, r.echoes, r.rounds);
  print_results(paths, paths.size() - 1, r.per_round, r.echoes, r.rounds);
  e.close();
  return 0;
}

// `ferry ARGS...` in `cwd` to its end: its exit status.
int run_ferry(const std::filesystem::path& cwd, std::vector<std::string> args) {
  args.insert(args.begin(), FERRY_BIN);
  const pid_t pid = ::fork();
  if (pid == 0) exec_ferry(cwd, args);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The bound under the relay: 64-byte round trips through srun's own stdio (`srun --overlap cat` in
// the allocation), no ferry involved, printed before the table.
void print_srun_echo(const SlurmCluster& slurm) {
  const std::string script =
      "import subprocess, time, statistics\n"
      "job = subprocess.run(['squeue', '-h', '-o', '%i', '-t', 'RUNNING'], capture_output=True, text=True).stdout.split()[0]\n"
      "p = subprocess.Popen(['srun', '--jobid', job, '--overlap', '-N1', '-n1', '--unbuffered', 'cat'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)\n"
      "rtts = []\n"
      "for i in range(60):\n"
      "    t = time.perf_counter(); p.stdin.write(b'e' * 63 + b'\\n'); got = b''\n"
      "    while len(got) < 64: got += p.stdout.read(64 - len(got))\n"
      "    rtts.append((time.perf_counter() - t) * 1e6)\n"
      "p.stdin.close(); p.wait()\n"
      "print('srun --overlap cat: 64-byte echo median %.0f us over 60 (first %.0f us)' % (statistics.median(rtts[1:]), rtts[0]))\n";
  write_file("/tmp/ferry-bench-srun-echo.py", script);
  const auto r = slurm.run("python3 /tmp/ferry-bench-srun-echo.py");
  std::printf("%s%s\n", r.out.c_str(), r.status == 0 ? "" : ("(srun echo failed: " + r.err + ")").c_str());
}

// A Slurm cluster's compute node, reached from here: ferry tunnel into a `ferry alloc` allocation
// (the agent in the job relays, srun carries its stream over the login link) against what HPC
// users do today, ssh -L through the login node to the node (here the node is 127.0.0.1, so that
// row is one sshd hop, a best case for ssh), and ferry tunnel to the login node (--login-node).
int slurm_bench(std::uint64_t bytes, int echoes) {
  SlurmCluster slurm;
  SshdFixture login;
  login.trust_host_key();
  TempDir project("ferry-bench-slurm");
  write_file(project / "ferry.json",
             nlohmann::json{{"name", "benchslurm"}, {"host", login.alias()}, {"sshConfig", login.ssh_config().string()},
                            {"mappings", {{{"local", "."}, {"remote", "~/benchslurm"}}}},
                            {"env", {{"SLURM_CONF", slurm.conf().string()}}},
                            {"slurm", {{"partition", "main"}, {"time", "30"}}}}
                 .dump(2));
  if (run_ferry(project.path(), {"alloc"}) != 0) throw std::runtime_error("ferry alloc failed");
  print_srun_echo(slurm);
  BenchServer discard(BenchServer::Kind::kDiscard), source(BenchServer::Kind::kSource), echo(BenchServer::Kind::kEcho);
  auto spec = [](int port) { return "0:127.0.0.1:" + std::to_string(port); };
  std::vector<Path> paths;
  {
    FerryTunnel fa(project.path(), {"tunnel", spec(discard.port())}), fb(project.path(), {"tunnel", spec(source.port())}),
        fc(project.path(), {"tunnel", spec(echo.port())});
    paths.push_back(Path{"ferry tunnel into the allocation", fa.port, fb.port, fc.port, fa.pid, fb.pid});
    SshForward da(login, discard.port(), {}), db(login, source.port(), {}), dc(login, echo.port(), {});
    paths.push_back(Path{"ssh -L through the login node", da.port, db.port, dc.port, da.pid, db.pid});
    FerryTunnel la(project.path(), {"tunnel", "--login-node", spec(discard.port())}),
        lb(project.path(), {"tunnel", "--login-node", spec(source.port())}), lc(project.path(), {"tunnel", "--login-node", spec(echo.port())});
    paths.push_back(Path{"ferry tunnel to the login node", la.port, lb.port, lc.port, la.pid, lb.pid});
    const Rounds r = rounds_for(bytes, echoes);
    measure(paths, r.per_round, r.echoes, r.rounds);
    print_results(paths, paths.size(), r.per_round, r.echoes, r.rounds);
    std::printf("\n(into the allocation, the CPU column counts the ferry process only: the relaying agents run under sshd and srun)\n");
  }
  (void)run_ferry(project.path(), {"alloc", "--release"});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t mib = argc > 1 ? std::stoull(argv[1]) : 256;
  const int echoes = argc > 2 ? std::stoi(argv[2]) : 1000;
  const bool slurm = argc > 3 && std::string(argv[3]) == "slurm";
  return slurm ? slurm_bench(mib << 20, echoes) : ssh_bench(mib << 20, echoes);
}

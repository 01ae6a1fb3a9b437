// bench/wan: ferry against scp, rsync and ssh -L on a long link, simulated on loopback by a delay
// relay (bench/wan/delay_relay.hpp) in front of tests/integration's sshd. For each round-trip time
// it measures, each in the same run as its peers: push and pull of a new big file (ferry sync /
// ferry pull vs scp and rsync), a tunnel download (ferry tunnel vs ssh -L) and the initial sync of
// bench/sync_vs_rsync's tree (ferry sync vs rsync). Prints one markdown
// table of times and speedups (peer time / ferry time: higher is better). Environment:
//   FERRY_WAN_MB (1024)          size of the file and of the tunnel download
//   FERRY_WAN_RTTS (0,50,150)    round-trip times in ms (0: straight to sshd, no relay)
//   FERRY_WAN_ONLY (all)         comma list of push, pull, tunnel, tree
//   FERRY_WAN_TREE_FILES (20000) FERRY_WAN_TREE_BIG_MB (256)  the initial-sync tree (bench/sync_vs_rsync's:
//                                small text files plus one big text file), ferry sync vs rsync -a
//   FERRY_WAN_DIR (/dev/shm/ferry-wan-bench)  files and remote copies (all removed after use)
//   FERRY_WAN_FERRY_ARGS ("")    put before ferry's sub-command (e.g. "--log-level debug")
//   FERRY_BENCH_WARM_MEMORY (1)  0: no memory warm-up before each transfer (bench/common/warm_memory.hpp)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bench/common/text_tree.hpp"
#include "bench/common/warm_memory.hpp"
#include "bench/wan/delay_relay.hpp"
#include "tests/integration/sshd_fixture.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::uint64_t env_num(const char* name, std::uint64_t def) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : def;
}
std::string env_str(const char* name, std::string def) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : def;
}
std::vector<int> env_list(const char* name, const std::string& def) {
  std::vector<int> out;
  std::stringstream in(env_str(name, def));
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(std::stoi(item));
  return out;
}
std::string q(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
double timed(const std::string& cmd) {
  auto t0 = Clock::now();
  ferry::test::run_command(cmd);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Incompressible bytes, like a checkpoint: no tool gains from compression.
void make_random_file(const fs::path& p, std::uint64_t bytes) {
  std::mt19937_64 rng(7);
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  std::vector<std::uint64_t> buf(1u << 17);
  for (std::uint64_t done = 0; done < bytes; done += buf.size() * 8) {
    for (auto& w : buf) w = rng();
    out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(std::min<std::uint64_t>(buf.size() * 8, bytes - done)));
  }
}

bool same_tree(const fs::path& a, const fs::path& b) {
  return ferry::test::run_command("diff -rq --exclude=.ferry --exclude=ferry.json " + q(a.string()) + " " + q(b.string()) +
                                  " >/dev/null 2>&1 && echo same") == "same\n";
}

bool same_file(const fs::path& a, const fs::path& b) {
  return fs::exists(b) && fs::file_size(a) == fs::file_size(b) &&
         ferry::test::run_command("cmp -s " + q(a.string()) + " " + q(b.string()) + " && echo same") == "same\n";
}

// A server on 127.0.0.1 that sends `bytes` to every connection, then closes it (the tunnels' target).
class SourceServer {
 public:
  explicit SourceServer(std::uint64_t bytes) : bytes_(bytes) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("source server: cannot listen");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~SourceServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }

 private:
  void loop() {
    std::string chunk(1u << 20, 'x');
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      for (std::uint64_t sent = 0; sent < bytes_;) {
        auto n = ::send(c, chunk.data(), std::min<std::uint64_t>(chunk.size(), bytes_ - sent), MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<std::uint64_t>(n);
      }
      ::close(c);
    }
  }
  std::uint64_t bytes_;
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Connects to 127.0.0.1:port and reads to EOF: seconds and bytes.
std::pair<double, std::uint64_t> download(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  auto t0 = Clock::now();
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("download: connect failed");
  std::vector<char> buf(1u << 20);
  std::uint64_t got = 0;
  for (ssize_t n; (n = ::read(fd, buf.data(), buf.size())) > 0;) got += static_cast<std::uint64_t>(n);
  ::close(fd);
  return {std::chrono::duration<double>(Clock::now() - t0).count(), got};
}

// A forwarder process (ssh -L or ferry tunnel) listening on a local port; killed at scope end.
struct Forwarder {
  pid_t pid = -1;
  int port = 0;
  ~Forwarder() {
    if (pid > 0) {
      ::kill(pid, SIGINT);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

void start_ssh_forward(Forwarder& f, const fs::path& config, const std::string& alias, int target) {
  f.port = ferry::test::pick_free_port();
  std::string spec = fmt::format("127.0.0.1:{}:127.0.0.1:{}", f.port, target);
  f.pid = ::fork();
  if (f.pid == 0) {
    ::signal(SIGINT, SIG_DFL);  // a bench started in the background inherits SIGINT ignored; the destructor sends it
    ::execlp("ssh", "ssh", "-F", config.c_str(), "-N", "-o", "ExitOnForwardFailure=yes", "-L", spec.c_str(), alias.c_str(),
             static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (!ferry::test::wait_for_port(f.port, 30s)) throw std::runtime_error("ssh -L did not start");
}

// `ferry tunnel 0:127.0.0.1:TARGET`; its port comes from its first stdout line.
void start_ferry_tunnel(Forwarder& f, const std::string& ferry, const fs::path& config, const fs::path& cwd,
                        const std::string& alias, int target) {
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error("pipe failed");
  std::string spec = "0:127.0.0.1:" + std::to_string(target);
  f.pid = ::fork();
  if (f.pid == 0) {
    ::signal(SIGINT, SIG_DFL);
    ::dup2(out[1], 1);
    ::close(out[0]);
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execl(ferry.c_str(), ferry.c_str(), "-F", config.c_str(), "tunnel", "--host", alias.c_str(), spec.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  std::string line;
  char c = 0;
  pollfd p{out[0], POLLIN, 0};
  auto deadline = Clock::now() + 60s;
  while (Clock::now() < deadline && (line.empty() || line.back() != '\n')) {
    if (::poll(&p, 1, 1000) <= 0) continue;
    if (::read(out[0], &c, 1) != 1) break;
    line += c;
  }
  ::close(out[0]);
  auto colon = line.find(':'), space = line.find(' ');
  if (line.rfind("127.0.0.1:", 0) != 0 || space == std::string::npos) throw std::runtime_error("ferry tunnel did not start: " + line);
  f.port = std::stoi(line.substr(colon + 1, space - colon - 1));
}

std::string secs(double s) { return fmt::format("{:.2f} s", s); }
std::string speedup(double peer, double ferry) { return fmt::format("{:.2f}x", peer / ferry); }

}  // namespace

int main() {
  const fs::path dir = env_str("FERRY_WAN_DIR", "/dev/shm/ferry-wan-bench");
  const std::uint64_t mb = env_num("FERRY_WAN_MB", 1024), bytes = mb << 20;
  const std::vector<int> rtts = env_list("FERRY_WAN_RTTS", "0,50,150");
  const std::string only = env_str("FERRY_WAN_ONLY", "");
  const std::string ferry_bin = env_str("FERRY_BIN", "");
  const std::string ferry = ferry_bin.empty() ? "" : q(ferry_bin) + " " + env_str("FERRY_WAN_FERRY_ARGS", "");
  if (ferry.empty() || !std::getenv("FERRY_AGENT")) {
    std::cerr << "wan_bench: set FERRY_BIN and FERRY_AGENT (bench/wan/run.sh does)\n";
    return 2;
  }
  auto part = [&](const std::string& name) { return only.empty() || ("," + only + ",").find("," + name + ",") != std::string::npos; };
  auto log = [](const std::string& s) { std::cerr << "wan_bench: " << s << std::endl; };
  fs::remove_all(dir);
  fs::create_directories(dir / "tmp");
  ::setenv("TMPDIR", (dir / "tmp").c_str(), 1);  // the fixture and the remote home on /dev/shm
  ::unsetenv("SSH_AUTH_SOCK");
  ferry::test::SshdFixture sshd;
  sshd.trust_host_key();
  const fs::path cfg = sshd.ssh_config();
  const std::string known = [&] {
    std::ifstream in(sshd.known_hosts());
    std::string line;
    std::getline(in, line);
    return line.substr(line.find(' '));  // " ssh-ed25519 AAAA...": the same key under another port
  }();

  const fs::path src = dir / "big.bin";
  log(fmt::format("writing {} MiB of random bytes", mb));
  make_random_file(src, bytes);
  const fs::path remote = dir / "remote";
  fs::create_directories(remote / "pull");
  // A hard link, not a copy: a GiB less held in memory (bench/common/warm_memory.hpp says why that matters).
  fs::create_hard_link(src, remote / "pull" / "big.bin");
  SourceServer source(bytes);
  {
    // The agent is installed once per box; every measurement below is of a box that has it, as a
    // user's is after the first connect.
    const fs::path warm = dir / "warm-project";
    fs::create_directories(warm);
    std::ofstream(warm / "ferry.json") << fmt::format(R"({{"name":"warm","host":"{}","sshConfig":"{}","mappings":[{{"local":".","remote":"{}"}}]}})",
                                                      sshd.alias(), cfg.string(), (remote / "warm").string());
    log("installing the agent");
    ferry::test::run_command(fmt::format("{} --project {} sync --yes --json >/dev/null", ferry, q(warm.string())));
    fs::remove_all(warm);
  }
  const std::uint64_t tree_files = env_num("FERRY_WAN_TREE_FILES", 20000), tree_big_mb = env_num("FERRY_WAN_TREE_BIG_MB", 256);
  const fs::path tree = dir / "tree";
  if (part("tree")) {
    log(fmt::format("building a tree of {} files + {} MiB", tree_files, tree_big_mb));
    ferry::bench::make_small_tree(tree, tree_files, 4096, 1);
    ferry::bench::make_big_text_file(tree / "big.bin", tree_big_mb << 20, 2);
  }

  std::uint64_t tree_bytes = 0;
  if (part("tree"))
    for (const auto& e : fs::recursive_directory_iterator(tree))
      if (e.is_regular_file()) tree_bytes += (e.file_size() + 4095) / 4096 * 4096;  // the pages it takes
  // Each transfer that writes files starts on memory the VM backs already (bench/common/warm_memory.hpp):
  // what it writes and a quarter more, for what the tools hold around it.
  const bool warm = env_num("FERRY_BENCH_WARM_MEMORY", 1) != 0;
  double warm_total = 0;
  std::uint64_t warm_bytes = 0;
  auto timed_warm = [&](const std::string& cmd, std::uint64_t writes) {
    if (warm) {
      const std::uint64_t n = writes + writes / 4;
      const double t = ferry::bench::warm_memory(dir, n);
      log(fmt::format("warm-up of {} MiB: {:.2f} s", n >> 20, t));
      warm_total += t;
      warm_bytes += n;
    }
    return timed(cmd);
  };

  std::printf("| RTT | what (%llu MiB, incompressible) | ferry | scp / ssh -L | rsync | ferry speedup vs scp / ssh -L | vs rsync |\n",
              static_cast<unsigned long long>(mb));
  std::printf("|---|---|---|---|---|---|---|\n");
  for (int rtt : rtts) {
    std::optional<ferry::bench::DelayRelay> relay;
    std::string alias = sshd.alias();
    if (rtt > 0) {
      relay.emplace(ferry::bench::DelayRelayOptions{sshd.port(), std::chrono::milliseconds(rtt / 2), std::chrono::seconds(3600)});
      alias = fmt::format("wan{}", rtt);
      sshd.add_client_config(fmt::format("Host {}\n  HostName 127.0.0.1\n  Port {}\n  User {}\n  IdentityFile {}\n  IdentitiesOnly yes\n"
                                         "  UserKnownHostsFile {}\n  GlobalKnownHostsFile none\n",
                                         alias, relay->port(), std::getenv("USER") ? std::getenv("USER") : "root",
                                         sshd.client_key().string(), sshd.known_hosts().string()));
      std::ofstream(sshd.known_hosts(), std::ios::app) << "[127.0.0.1]:" << relay->port() << known << "\n";
    }
    const std::string ssh = "ssh -F " + cfg.string();
    auto project_in = [&](const fs::path& p, const fs::path& mapped) {
      std::ofstream(p / "ferry.json") << fmt::format(R"({{"name":"wan","host":"{}","sshConfig":"{}","mappings":[{{"local":".","remote":"{}"}}]}})",
                                                     alias, cfg.string(), mapped.string());
    };
    auto project = [&](const fs::path& p, const fs::path& mapped) {
      fs::remove_all(p);
      fs::create_directories(p);
      project_in(p, mapped);
    };
    if (part("push")) {
      log(fmt::format("{} ms: push", rtt));
      const fs::path p = dir / "push-project", out = remote / "push";
      project(p, out);
      fs::create_hard_link(src, p / "big.bin");
      auto clean = [&] { fs::remove_all(out); fs::create_directories(out); };
      clean();
      double tf = timed_warm(fmt::format("{} --project {} sync --yes --json >/dev/null", ferry, q(p.string())), bytes);
      bool ok_f = same_file(src, out / "big.bin");
      clean();
      double ts = timed_warm(fmt::format("scp -q -F {} {} {}:{}/", q(cfg.string()), q(src.string()), alias, q(out.string())), bytes);
      bool ok_s = same_file(src, out / "big.bin");
      clean();
      double tr = timed_warm(fmt::format("rsync -a -e {} {} {}:{}/", q(ssh), q(src.string()), alias, q(out.string())), bytes);
      bool ok_r = same_file(src, out / "big.bin");
      clean();
      std::printf("| %d ms | push a new file%s | %s | %s | %s | %s | %s |\n", rtt, ok_f && ok_s && ok_r ? "" : " (A COPY DIFFERS)",
                  secs(tf).c_str(), secs(ts).c_str(), secs(tr).c_str(), speedup(ts, tf).c_str(), speedup(tr, tf).c_str());
      std::fflush(stdout);
      fs::remove_all(p);
    }
    if (part("pull")) {
      log(fmt::format("{} ms: pull", rtt));
      const fs::path p = dir / "pull-project", local = dir / "pulled";
      const fs::path from = remote / "pull" / "big.bin";
      project(p, remote / "pull");
      double tf = timed_warm(fmt::format("{} --project {} pull --json big.bin >/dev/null", ferry, q(p.string())), bytes);
      bool ok_f = same_file(src, p / "big.bin");
      project(p, remote / "pull");
      fs::remove_all(local);
      fs::create_directories(local);
      double ts = timed_warm(fmt::format("scp -q -F {} {}:{} {}/", q(cfg.string()), alias, q(from.string()), q(local.string())), bytes);
      bool ok_s = same_file(src, local / "big.bin");
      fs::remove_all(local);
      fs::create_directories(local);
      double tr = timed_warm(fmt::format("rsync -a -e {} {}:{} {}/", q(ssh), alias, q(from.string()), q(local.string())), bytes);
      bool ok_r = same_file(src, local / "big.bin");
      fs::remove_all(local);
      fs::remove_all(p);
      std::printf("| %d ms | pull a new file%s | %s | %s | %s | %s | %s |\n", rtt, ok_f && ok_s && ok_r ? "" : " (A COPY DIFFERS)",
                  secs(tf).c_str(), secs(ts).c_str(), secs(tr).c_str(), speedup(ts, tf).c_str(), speedup(tr, tf).c_str());
      std::fflush(stdout);
    }
    if (part("tree")) {
      log(fmt::format("{} ms: initial sync of {} files + {} MiB", rtt, tree_files, tree_big_mb));
      const fs::path out = remote / "tree";
      auto clean = [&] {
        fs::remove_all(out);
        fs::remove_all(tree / ".ferry");
        fs::create_directories(out);
      };
      clean();
      project_in(tree, out);
      double tf = timed_warm(fmt::format("{} --project {} sync --yes --json >/dev/null", ferry, q(tree.string())), tree_bytes);
      bool ok_f = same_tree(tree, out);
      clean();
      double tr = timed_warm(fmt::format("rsync -a --exclude=/.ferry --exclude=/ferry.json -e {} {}/ {}:{}/", q(ssh), q(tree.string()), alias,
                                         q(out.string())),
                                  tree_bytes);
      bool ok_r = same_tree(tree, out);
      clean();
      std::printf("| %d ms | initial sync, %llu files + %llu MiB of text%s | %s | - | %s | - | %s |\n", rtt,
                  static_cast<unsigned long long>(tree_files), static_cast<unsigned long long>(tree_big_mb),
                  ok_f && ok_r ? "" : " (A COPY DIFFERS)", secs(tf).c_str(), secs(tr).c_str(), speedup(tr, tf).c_str());
      std::fflush(stdout);
    }
    if (part("tunnel")) {
      log(fmt::format("{} ms: tunnel download", rtt));
      double tf = 0, ts = 0;
      std::uint64_t gf = 0, gs = 0;
      {
        Forwarder f;
        start_ferry_tunnel(f, ferry_bin, cfg, sshd.dir(), alias, source.port());
        std::tie(tf, gf) = download(f.port);
      }
      {
        Forwarder s;
        start_ssh_forward(s, cfg, alias, source.port());
        std::tie(ts, gs) = download(s.port);
      }
      std::printf("| %d ms | tunnel download%s | %s | %s | - | %s | - |\n", rtt, gf == bytes && gs == bytes ? "" : " (SHORT)",
                  secs(tf).c_str(), secs(ts).c_str(), speedup(ts, tf).c_str());
      std::fflush(stdout);
    }
  }
  if (warm) {
    // In the table's output, so a record says what state the VM's memory was in: well under 1 s a
    // GiB is memory it had backed; seconds a GiB mean the tools wrote into pages it had to back.
    const double gib = static_cast<double>(warm_bytes) / (1u << 30);
    std::printf("\nMemory warm-ups before the transfers: %.1f GiB in %.1f s (%.2f s per GiB; backed memory takes ~0.4-0.9).\n", gib,
                warm_total, gib > 0 ? warm_total / gib : 0.0);
    log(fmt::format("memory warm-ups took {:.1f} s in all", warm_total));
  }
  fs::remove_all(dir);
  return 0;
}

// `ferry tunnel` as a user runs it, against a real sshd: the printed line names the chosen port,
// bytes flow through it (on this short link through the OpenSSH master, up before the line),
// Ctrl-C (SIGINT) closes the tunnel and exits 0, and clients that close while the remote is
// sending never take the process down, over libssh2 or through the master.
#define BOOST_TEST_MODULE tunnel_cli
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <regex>

#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/tcp_peers.hpp"
#include "tests/support/wait_for.hpp"

using namespace ferry::test;
using namespace std::chrono_literals;

namespace {

// `ferry tunnel --host ALIAS SPEC` as a shell starts it: default signal dispositions (a test
// runner's ignored SIGPIPE would otherwise be inherited and hide a missing MSG_NOSIGNAL).
struct TunnelProcess {
  pid_t pid = -1;
  int out = -1;
  std::string first_line;  // "127.0.0.1:PORT → remote HOST:PORT\n"
  int port = 0;            // the local port from that line, 0 if it never came
  int remote_port = 0;

  // `openssh_tunnels`: FERRY_OPENSSH_TUNNELS for the process ("": unset, the default rule).
  TunnelProcess(const SshdFixture& sshd, const std::string& spec, const std::string& openssh_tunnels = "") {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::signal(SIGPIPE, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
      if (openssh_tunnels.empty()) ::unsetenv("FERRY_OPENSSH_TUNNELS");
      else ::setenv("FERRY_OPENSSH_TUNNELS", openssh_tunnels.c_str(), 1);
      if (::chdir(sshd.dir().c_str()) != 0) ::_exit(126);  // no ferry.json above
      ::execl(FERRY_BIN, FERRY_BIN, "-F", sshd.ssh_config().c_str(), "tunnel", "--host", sshd.alias().c_str(),
              spec.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    out = fds[0];
    char c;
    pollfd p{out, POLLIN, 0};
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline && (first_line.empty() || first_line.back() != '\n')) {
      if (::poll(&p, 1, 1000) <= 0) continue;
      if (::read(out, &c, 1) != 1) break;
      first_line += c;
    }
    std::smatch m;
    if (std::regex_search(first_line, m, std::regex(R"(^127\.0\.0\.1:(\d+) → remote 127\.0\.0\.1:(\d+)\n$)"))) {
      port = std::stoi(m[1].str());
      remote_port = std::stoi(m[2].str());
    }
  }
  ~TunnelProcess() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (out >= 0) ::close(out);
  }

  // "running", or how it ended (reaps it). `grace`: how long an exit already under way may take
  // to show (a connection's EOF can reach us before the dying process is reapable).
  std::string state(std::chrono::milliseconds grace = 0ms) {
    int status = 0;
    if (pid <= 0) return "stopped";
    if (int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(grace.count()));
      ::close(pidfd);
    }
    if (::waitpid(pid, &status, WNOHANG) != pid) return "running";
    pid = -1;
    if (WIFSIGNALED(status)) return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")";
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }

  // SIGINT, then the exit status (nullopt if it did not exit within 20 s; then killed).
  std::optional<int> stop() {
    ::kill(pid, SIGINT);
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + 20s;
    pid_t done = 0;
    while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
      ::poll(nullptr, 0, 20);  // waiting for the child's exit, bounded by the deadline
    if (done == 0) return std::nullopt;
    pid = -1;
    return status;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(ferry_tunnel_prints_forwards_and_stops_on_ctrl_c) {
  SshdFixture sshd;
  sshd.trust_host_key();
  EchoServer echo;
  TunnelProcess tunnel(sshd, "0:127.0.0.1:" + std::to_string(echo.port()));
  BOOST_REQUIRE_MESSAGE(tunnel.port > 0, "stdout: " << tunnel.first_line << "\n" << sshd.log());
  BOOST_TEST(tunnel.remote_port == echo.port());
  // On a short link the OpenSSH master is up before the tunnel is announced, so the first
  // connection goes through it (as fast as ssh -L), not over libssh2 for its whole life.
  BOOST_TEST(std::ranges::count(process_tree(tunnel.pid), std::string("ssh"), comm_of) == 1);

  int fd = tcp_connect("127.0.0.1", tunnel.port);
  BOOST_REQUIRE(fd >= 0);
  write_all_fd(fd, "through ferry tunnel");
  ::shutdown(fd, SHUT_WR);
  BOOST_TEST(read_to_eof(fd, 10s) == "through ferry tunnel");
  ::close(fd);

  int port = tunnel.port;
  auto status = tunnel.stop();
  BOOST_TEST(status.has_value());
  BOOST_TEST((status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0));
  BOOST_TEST(tcp_connect("127.0.0.1", port) == -ECONNREFUSED);
}

namespace {

// The byte at `offset` of the stream StreamServer sends: position-dependent, so a lost, doubled
// or reordered block shows up in a byte-exact compare.
char stream_byte(std::uint64_t offset) {
  std::uint64_t x = offset / 8 + 0x9e3779b97f4a7c15ull;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return static_cast<char>(x >> (8 * (offset % 8)));
}

std::string stream_bytes(std::uint64_t from, std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = stream_byte(from + i);
  return s;
}

// A server that starts sending as soon as a connection is accepted (a bulk sender, a page that
// streams) the stream above, then closes: `first` bytes to the first connection, `later` bytes to
// each one after it. Its writes never raise SIGPIPE.
class StreamServer : public ferry::test::LoopbackServer {
 public:
  StreamServer(std::uint64_t first, std::uint64_t later)
      : LoopbackServer(
            [first, later](int c, int n, const std::atomic<bool>& stopping) {
              const std::uint64_t total = n == 0 ? first : later;
              constexpr std::size_t kBlock = 64 << 10;
              for (std::uint64_t off = 0; off < total && !stopping;) {
                std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, total - off));
                if (!write_all_fd(c, stream_bytes(off, len))) break;  // the far end went away
                off += len;
              }
            },
            256) {}
};

}  // namespace

// Issue #17: a client that connects and closes while the remote side is already sending (a port
// probe, a browser tab closed mid-load) made the bridge write into a closed socket; one such
// write without MSG_NOSIGNAL killed the whole `ferry tunnel` process with SIGPIPE (exit 141) and
// every other connection through it. 100 such probes, half closing with a reset, run while a
// long transfer goes through the same tunnel: the process lives and the transfer is byte-exact.
namespace {

void survives_clients_closing_during_the_first_burst(const std::string& openssh_tunnels) {
  SshdFixture sshd;
  sshd.trust_host_key();
  constexpr std::uint64_t kLong = 24 << 20;
  constexpr std::uint64_t kBurst = 512 << 10;  // several socket buffers: writes go on after the close
  constexpr int kProbes = 100;
  StreamServer server(kLong, kBurst);
  TunnelProcess tunnel(sshd, "0:127.0.0.1:" + std::to_string(server.port()), openssh_tunnels);
  BOOST_REQUIRE_MESSAGE(tunnel.port > 0, "stdout: " << tunnel.first_line << "\n" << sshd.log());

  int long_fd = tcp_connect("127.0.0.1", tunnel.port);
  BOOST_REQUIRE(long_fd >= 0);
  std::uint64_t got = 0;
  bool exact = true;
  const std::size_t slice = kLong / (kProbes + 1);
  auto read_slice = [&](int probes_done) {
    std::string part;
    try {
      part = read_exactly(long_fd, slice, 30s);
    } catch (const std::exception& e) {
      BOOST_FAIL("long transfer after " << got << " bytes and " << probes_done << " probes: " << e.what()
                                         << "; ferry tunnel: " << tunnel.state(2s));
    }
    exact = exact && part == stream_bytes(got, part.size());
    got += part.size();
  };
  // The first slice arrives before any probe connects, so the server's first connection (the
  // long stream) is this one.
  read_slice(0);
  for (int i = 0; i < kProbes; ++i) {
    int probe = tcp_connect("127.0.0.1", tunnel.port);
    if (probe < 0) BOOST_FAIL("probe " << i << ": connect: " << std::strerror(-probe) << "; ferry tunnel: " << tunnel.state(2s));
    if (i % 2) {
      linger hard{1, 0};  // close with a reset, as a killed client does
      ::setsockopt(probe, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    }
    ::close(probe);
    // The long transfer moves on between probes, so they all land while it runs.
    read_slice(i + 1);
  }
  std::string rest = read_to_eof(long_fd, 60s);
  exact = exact && rest == stream_bytes(got, rest.size());
  got += rest.size();
  ::close(long_fd);
  BOOST_TEST(got == kLong);
  BOOST_TEST(exact, "the long transfer's bytes differ from what the server sent");
  // Every probe reached the server (each channel opens after its client already left).
  BOOST_TEST(eventually([&] { return server.connections() >= kProbes + 1; }, 30s), server.connections() << " connections");

  BOOST_TEST_REQUIRE(tunnel.state() == "running");
  // Still forwarding: a new connection gets the stream from its start.
  int again = tcp_connect("127.0.0.1", tunnel.port);
  BOOST_REQUIRE(again >= 0);
  BOOST_TEST(read_exactly(again, 4096, 30s) == stream_bytes(0, 4096));
  ::close(again);
  auto exit = tunnel.stop();
  BOOST_TEST((exit && WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0));
}

}  // namespace

// Through the libssh2 bridge (issue #17's path) and through the OpenSSH master (`ferry tunnel`'s
// default on a short link).
BOOST_AUTO_TEST_CASE(ferry_tunnel_survives_clients_closing_during_the_first_burst_over_libssh2) {
  survives_clients_closing_during_the_first_burst("0");
}

BOOST_AUTO_TEST_CASE(ferry_tunnel_survives_clients_closing_during_the_first_burst_through_openssh) {
  survives_clients_closing_during_the_first_burst("");
}

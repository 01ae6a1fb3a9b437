// Tunnels through SshEndpoint against a real sshd: an HTTP server on the remote's loopback
// through a local tunnel, 32 concurrent 8 MiB echo streams with checksums, a reverse tunnel, the
// listener unreachable on non-loopback addresses, closing (live connections and fds), and the same
// local port forwarding again after sshd is killed and restarted.
#define BOOST_TEST_MODULE tunnel_ssh
#include <boost/test/unit_test.hpp>

#include <ifaddrs.h>
#include <signal.h>
#include <sys/wait.h>

#include <condition_variable>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include "helper/remote/ssh_endpoint.hpp"
#include "tests/integration/endpoint_options.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/stream_diff.hpp"
#include "tests/support/tcp_peers.hpp"

using namespace ferry::remote;
using ferry::net::port_holder;
using namespace ferry::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

using ferry::test::StateLog;

// Reconnects quickly: the tunnel tests restart sshd and wait for the forwards to come back.
SshEndpointOptions options_for(const SshdFixture& f, StateLog* log = nullptr) {
  SshEndpointOptions o = ferry::test::endpoint_options_for(f, log);
  o.backoff_initial = 100ms;
  o.backoff_max = 500ms;
  return o;
}

struct Connected {
  SshdFixture sshd;
  StateLog log;
  std::unique_ptr<SshEndpoint> endpoint;
  Connected() {
    sshd.trust_host_key();
    endpoint = std::make_unique<SshEndpoint>(options_for(sshd, &log));
    auto info = endpoint->connect(20s);
    if (!info) throw std::runtime_error(info.error().message + "\n" + sshd.log());
  }
};

ForwardSpec local_to(int remote_port, int local_port = 0) {
  ForwardSpec s;
  s.local_port = local_port;
  s.remote_host = "127.0.0.1";
  s.remote_port = remote_port;
  return s;
}

// One echo round trip through 127.0.0.1:port; the reply, or "" when the connection failed.
std::string echo_once(int port, const std::string& payload) {
  int fd = tcp_connect("127.0.0.1", port);
  if (fd < 0) return "";
  write_all_fd(fd, payload);
  ::shutdown(fd, SHUT_WR);
  std::string got;
  try {
    got = read_to_eof(fd, 20s);
  } catch (...) {
  }
  ::close(fd);
  return got;
}

// A child process (python3 -m http.server) killed at scope end.
struct Child {
  pid_t pid = -1;
  explicit Child(std::vector<std::string> argv, const fs::path& cwd) {
    pid = ::fork();
    if (pid == 0) {
      if (::chdir(cwd.c_str()) != 0) ::_exit(127);
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~Child() {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(http_server_on_the_remote_through_a_local_tunnel) {
  Connected c;
  fs::path www = c.sshd.dir() / "www";
  fs::create_directories(www);
  std::ofstream(www / "hello.txt") << "hello through the tunnel\n";
  int http_port = pick_free_port();
  Child server({"/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1", std::to_string(http_port)}, www);
  BOOST_REQUIRE(wait_for_port(http_port, 10s));

  auto info = c.endpoint->open_forward(local_to(http_port));
  BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? std::string() : info.error().message));
  BOOST_TEST(info->bound_port > 0);  // port 0 asked for an ephemeral one
  BOOST_TEST((info->state == ferry::protocol::ForwardState::active));
  BOOST_TEST(describe(*info) == "127.0.0.1:" + std::to_string(info->bound_port) + " → remote 127.0.0.1:" + std::to_string(http_port));

  int fd = tcp_connect("127.0.0.1", info->bound_port);
  BOOST_REQUIRE(fd >= 0);
  write_all_fd(fd, "GET /hello.txt HTTP/1.0\r\nHost: localhost\r\n\r\n");
  std::string response = read_to_eof(fd, 10s);
  ::close(fd);
  BOOST_TEST(response.starts_with("HTTP/1.0 200"));
  BOOST_TEST(response.ends_with("\r\n\r\nhello through the tunnel\n"));

  auto list = c.endpoint->list_forwards();
  BOOST_REQUIRE(list.size() == 1u);
  BOOST_TEST(list[0].id == info->id);
  BOOST_TEST(list[0].accepted == 1u);
}

BOOST_AUTO_TEST_CASE(thirty_two_concurrent_connections_of_8_mib_each) {
  Connected c;
  EchoServer echo;
  auto info = c.endpoint->open_forward(local_to(echo.port()));
  BOOST_REQUIRE(info.has_value());
  constexpr int kStreams = 32;
  constexpr std::size_t kBytes = 8 << 20;
  std::vector<std::future<std::string>> results;
  auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < kStreams; ++i) {
    results.push_back(std::async(std::launch::async, [port = info->bound_port, i] {
      std::string payload(kBytes, '\0');
      std::mt19937_64 rng(static_cast<std::uint64_t>(i) + 1);
      for (std::size_t k = 0; k + 8 <= payload.size(); k += 8) {
        auto v = rng();
        std::memcpy(payload.data() + k, &v, 8);
      }
      int fd = tcp_connect("127.0.0.1", port);
      if (fd < 0) return std::string("connect failed");
      // Write on a second thread: the echo comes back while we are still sending.
      std::thread writer([&] {
        write_all_fd(fd, payload);
        ::shutdown(fd, SHUT_WR);  // EOF must reach the echo server, and its EOF come back
      });
      std::string got, ending = "EOF";
      try {
        got = read_to_eof(fd, 120s);
      } catch (const std::exception& e) {
        ending = e.what();
        ::shutdown(fd, SHUT_RDWR);  // unblocks the writer
      }
      writer.join();
      ::close(fd);
      auto diff = describe_stream_difference(payload, got);
      return diff.empty() ? diff : diff + "; ended with " + ending;
    }));
  }
  int matched = 0;
  for (int i = 0; i < kStreams; ++i) {
    auto diff = results[static_cast<std::size_t>(i)].get();
    if (diff.empty()) ++matched;
    else BOOST_TEST_MESSAGE("stream " << i << ": " << diff);
  }
  auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  BOOST_TEST_MESSAGE("32 x 8 MiB echoed in " << secs << " s");
  BOOST_TEST(matched == kStreams);
  BOOST_TEST(echo.connections() == kStreams);
}

BOOST_AUTO_TEST_CASE(reverse_tunnel_reaches_a_port_here) {
  Connected c;
  EchoServer echo;  // "here"
  ForwardSpec spec;
  spec.kind = ForwardKind::kReverse;
  spec.remote_port = pick_free_port();
  spec.local_port = echo.port();
  auto info = c.endpoint->open_forward(spec);
  BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? std::string() : info.error().message));
  BOOST_TEST(info->bound_port == spec.remote_port);
  // The remote's loopback is this machine's: the port must be sshd's listener, not ours.
  BOOST_TEST(port_holder(spec.remote_port).find("sshd") != std::string::npos, port_holder(spec.remote_port));
  BOOST_TEST(echo_once(spec.remote_port, "reverse ping") == "reverse ping");
  BOOST_TEST(echo.connections() == 1);

  // Closing it removes the server's listener.
  BOOST_REQUIRE(c.endpoint->close_forward(info->id).has_value());
  auto deadline = std::chrono::steady_clock::now() + 10s;
  int fd = 0;
  while (std::chrono::steady_clock::now() < deadline) {  // the cancel travels to sshd: wait for its effect
    fd = tcp_connect("127.0.0.1", spec.remote_port);
    if (fd == -ECONNRESET) continue;  // the listener closed while our SYN was in its queue
    if (fd < 0) break;
    ::close(fd);
    std::this_thread::sleep_for(20ms);  // polling the observable effect, bounded by the deadline
  }
  BOOST_TEST(fd == -ECONNREFUSED);
}

BOOST_AUTO_TEST_CASE(listener_is_not_reachable_on_non_loopback_addresses) {
  Connected c;
  EchoServer echo;
  auto info = c.endpoint->open_forward(local_to(echo.port()));
  BOOST_REQUIRE(info.has_value());
  ifaddrs* list = nullptr;
  BOOST_REQUIRE(::getifaddrs(&list) == 0);
  int checked = 0;
  for (auto* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    char ip[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, ip, sizeof ip);
    if (std::string(ip).starts_with("127.")) continue;
    int fd = tcp_connect(ip, info->bound_port);
    BOOST_TEST(fd == -ECONNREFUSED, "connect to " << ip << ":" << info->bound_port << " gave " << fd);
    if (fd >= 0) ::close(fd);
    ++checked;
  }
  ::freeifaddrs(list);
  BOOST_TEST_MESSAGE("non-loopback IPv4 addresses checked: " << checked);
  // Where the machine has none, the bound address itself says it: 127.0.0.1 in /proc/net/tcp.
  char want[32];
  std::snprintf(want, sizeof want, "0100007F:%04X", info->bound_port);
  std::ifstream tcp("/proc/net/tcp");
  std::string all((std::istreambuf_iterator<char>(tcp)), {});
  char wildcard[32];
  std::snprintf(wildcard, sizeof wildcard, "00000000:%04X", info->bound_port);
  BOOST_TEST(all.find(want) != std::string::npos);
  BOOST_TEST(all.find(wildcard) == std::string::npos);
  BOOST_TEST(echo_once(info->bound_port, "loopback works") == "loopback works");

  ForwardSpec wide = local_to(echo.port());
  wide.bind_address = "0.0.0.0";
  auto refused = c.endpoint->open_forward(wide);
  BOOST_REQUIRE(!refused.has_value());
  BOOST_TEST(refused.error().message.find("loopback only") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(closing_a_tunnel_ends_its_connections_and_leaks_no_fds) {
  Connected c;
  EchoServer echo;
  // Warm up: the first tunnel creates lazily allocated fds (resolver, epoll) that stay.
  {
    auto warm = c.endpoint->open_forward(local_to(echo.port()));
    BOOST_REQUIRE(warm.has_value());
    BOOST_TEST(echo_once(warm->bound_port, "warm") == "warm");
    BOOST_REQUIRE(c.endpoint->close_forward(warm->id).has_value());
  }
  std::size_t before = open_fd_count();
  auto info = c.endpoint->open_forward(local_to(echo.port()));
  BOOST_REQUIRE(info.has_value());
  std::vector<int> clients;
  for (int i = 0; i < 4; ++i) {
    int fd = tcp_connect("127.0.0.1", info->bound_port);
    BOOST_REQUIRE(fd >= 0);
    write_all_fd(fd, "ping");
    BOOST_TEST(read_exactly(fd, 4, 10s) == "ping");  // the bridge is up
    clients.push_back(fd);
  }
  auto list = c.endpoint->list_forwards();
  BOOST_REQUIRE(list.size() == 1u);
  BOOST_TEST(list[0].live == 4u);

  BOOST_REQUIRE(c.endpoint->close_forward(info->id).has_value());
  for (int fd : clients) {
    BOOST_TEST(read_to_eof(fd, 10s).empty());  // the tunnel's close reached each live connection
    ::close(fd);
  }
  BOOST_TEST(tcp_connect("127.0.0.1", info->bound_port) == -ECONNREFUSED);
  BOOST_TEST(c.endpoint->list_forwards().empty());
  // A leak shows as more fds; fewer is the warm-up's last connection closing late.
  BOOST_TEST(settle_fd_count(before) <= before);
  BOOST_TEST(!c.endpoint->close_forward(info->id).has_value());
}

BOOST_AUTO_TEST_CASE(tunnels_come_back_after_a_reconnect) {
  Connected c;
  EchoServer echo;
  auto local = c.endpoint->open_forward(local_to(echo.port()));
  BOOST_REQUIRE(local.has_value());
  ForwardSpec rspec;
  rspec.kind = ForwardKind::kReverse;
  rspec.remote_port = pick_free_port();
  rspec.local_port = echo.port();
  auto reverse = c.endpoint->open_forward(rspec);
  BOOST_REQUIRE(reverse.has_value());
  BOOST_TEST(echo_once(local->bound_port, "before") == "before");
  BOOST_TEST(echo_once(rspec.remote_port, "before-r") == "before-r");

  auto mark = c.log.size();
  c.sshd.kill_all();
  BOOST_REQUIRE(c.log.wait_for("reconnecting", mark, 20s));
  // During the outage the listener stays open: a connection waits in its backlog.
  int early = tcp_connect("127.0.0.1", local->bound_port);
  BOOST_TEST(early >= 0);
  c.sshd.start();
  BOOST_REQUIRE_MESSAGE(c.log.wait_for("connected", mark, 30s), c.sshd.log());
  BOOST_TEST(c.endpoint->reconnect_count() >= 1);

  BOOST_TEST(echo_once(local->bound_port, "after") == "after");  // the same local port
  BOOST_TEST(echo_once(rspec.remote_port, "after-r") == "after-r");
  if (early >= 0) {
    write_all_fd(early, "queued");
    ::shutdown(early, SHUT_WR);
    BOOST_TEST(read_to_eof(early, 20s) == "queued");
    ::close(early);
  }
  for (const auto& f : c.endpoint->list_forwards()) BOOST_TEST((f.state == ferry::protocol::ForwardState::active));
}

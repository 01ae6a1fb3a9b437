// AgentTunnel over a real ferry-agent (LocalEndpoint): connections accepted here are opened by the
// agent (tcp/connect) and carried over its wire: an echo server gets every byte back in order, a
// client's half-close reaches the server and the server's reply still comes back, several
// connections at once stay apart, a port nobody listens on closes the client's connection, and
// closing the tunnel ends the live ones.
#define BOOST_TEST_MODULE agent_tunnel
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "helper/remote/agent_tunnel.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "tests/support/loopback_port.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using namespace std::chrono_literals;
using ferry::remote::AgentTunnel;
using ferry::remote::LocalEndpoint;
using ferry::remote::LocalEndpointOptions;
using ferry::remote::LoopbackListener;

namespace {

int listen_on(int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  BOOST_REQUIRE(::listen(fd, 16) == 0);
  return fd;
}

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

std::string read_all(int fd) {
  std::string s;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) s.append(buf, static_cast<std::size_t>(n));
  return s;
}

// An echo server: each connection's bytes back, then "|bye" after the client's half-close.
struct EchoServer {
  int port = 0;
  int fd = -1;
  std::thread thread;
  std::vector<std::thread> conns;
  EchoServer() {
    fd = listen_on(port);
    thread = std::thread([this] {
      for (int c; (c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
        conns.emplace_back([c] {
          char buf[65536];
          for (ssize_t n; (n = ::read(c, buf, sizeof buf)) > 0;)
            if (::send(c, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) break;
          (void)::send(c, "|bye", 4, MSG_NOSIGNAL);
          ::close(c);
        });
      }
    });
  }
  ~EchoServer() {
    ::shutdown(fd, SHUT_RDWR);
    thread.join();
    for (auto& t : conns) t.join();
    ::close(fd);
  }
};

struct Agent {
  ferry::test::TempDir dir{"ferry-agent-tunnel"};
  std::unique_ptr<LocalEndpoint> endpoint;
  Agent() {
    LocalEndpointOptions o;
    o.agent = FERRY_AGENT_PATH;
    o.root = dir.path() / "sandbox";
    endpoint = std::make_unique<LocalEndpoint>(o);
    auto info = endpoint->connect();
    BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? std::string() : info.error().message));
  }
  std::unique_ptr<AgentTunnel> tunnel(int target_port, const std::string& host = "127.0.0.1") {
    auto listener = LoopbackListener::open("127.0.0.1", 0);
    BOOST_REQUIRE(listener.has_value());
    return std::make_unique<AgentTunnel>(*endpoint, std::move(*listener), host, target_port);
  }
};

std::string random_bytes(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// Writes `data` on a thread of its own (the echo comes back meanwhile), half-closes, reads to EOF.
std::string exchange(int port, const std::string& data) {
  const int fd = connect_to(port);
  std::thread writer([&] {
    for (std::size_t at = 0; at < data.size();) {
      auto w = ::send(fd, data.data() + at, data.size() - at, MSG_NOSIGNAL);
      if (w <= 0) break;
      at += static_cast<std::size_t>(w);
    }
    ::shutdown(fd, SHUT_WR);
  });
  std::string got = read_all(fd);
  writer.join();
  ::close(fd);
  return got;
}

}  // namespace

BOOST_AUTO_TEST_CASE(bytes_go_both_ways_and_half_closes_travel) {
  EchoServer server;
  Agent agent;
  auto tunnel = agent.tunnel(server.port);
  const std::string big = random_bytes(4u << 20, 3);  // four windows' worth
  BOOST_TEST((exchange(tunnel->port(), big) == big + "|bye"));
  BOOST_TEST(exchange(tunnel->port(), "") == "|bye");
  BOOST_TEST(tunnel->accepted() == 2u);
}

BOOST_AUTO_TEST_CASE(connections_at_once_stay_apart) {
  EchoServer server;
  Agent agent;
  auto tunnel = agent.tunnel(server.port, "localhost");
  std::vector<std::thread> clients;
  std::atomic<int> right{0};
  for (unsigned i = 0; i < 6; ++i)
    clients.emplace_back([&, i] {
      const std::string data = random_bytes(300'000 + i * 1000, 10 + i);
      if (exchange(tunnel->port(), data) == data + "|bye") ++right;
    });
  for (auto& c : clients) c.join();
  BOOST_TEST(right.load() == 6);
}

BOOST_AUTO_TEST_CASE(nobody_listening_closes_the_client_connection) {
  Agent agent;
  int port = 0;
  const int fd = listen_on(port);
  ::close(fd);  // a port that was free a moment ago: nobody listens there now
  auto tunnel = agent.tunnel(port);
  const int c = connect_to(tunnel->port());
  BOOST_TEST(read_all(c).empty());  // EOF, no bytes: as ssh -L when the far side refuses
  ::close(c);
}

BOOST_AUTO_TEST_CASE(closing_the_tunnel_ends_live_connections) {
  EchoServer server;
  Agent agent;
  auto tunnel = agent.tunnel(server.port);
  const int c = connect_to(tunnel->port());
  BOOST_REQUIRE(::send(c, "ping", 4, MSG_NOSIGNAL) == 4);
  char buf[4];
  std::size_t have = 0;
  while (have < 4) {
    auto n = ::read(c, buf + have, 4 - have);
    BOOST_REQUIRE(n > 0);
    have += static_cast<std::size_t>(n);
  }
  BOOST_TEST(tunnel->live() == 1u);
  tunnel->close();
  BOOST_TEST(read_all(c).empty());  // the connection ends instead of hanging
  ::close(c);
  BOOST_TEST(tunnel->live() == 0u);
}

// Reverse: the agent listens (tcp/listen) and each connection it accepts is carried to a server
// here; a listener on anything but loopback is refused; closing the tunnel stops the listening.
BOOST_AUTO_TEST_CASE(a_reverse_tunnel_brings_the_agents_connections_here) {
  EchoServer here;
  Agent agent;
  auto listening = agent.endpoint->call("tcp/listen", {{"port", 0}});
  BOOST_REQUIRE_MESSAGE(listening.has_value(), (listening ? std::string() : listening.error().message));
  const int agent_port = (*listening)["port"].get<int>();
  BOOST_REQUIRE_GT(agent_port, 0);
  auto tunnel = std::make_unique<AgentTunnel>(*agent.endpoint, (*listening)["listenerId"].get<std::int64_t>(), "127.0.0.1", here.port);
  const std::string data = random_bytes(2u << 20, 21);
  const std::string got = exchange(agent_port, data);
  BOOST_TEST(got.size() == data.size() + 4);
  BOOST_TEST((got == data + "|bye"));
  BOOST_TEST(tunnel->accepted() == 1u);
  auto wide = agent.endpoint->call("tcp/listen", {{"host", "0.0.0.0"}, {"port", 0}});
  BOOST_REQUIRE(!wide.has_value());
  BOOST_TEST(wide.error().message.find("loopback only") != std::string::npos, wide.error().message);
  tunnel->close();
  // tcp/unlisten reached the agent: its port no longer accepts (ECONNREFUSED once it is closed).
  BOOST_TEST(ferry::test::eventually([&] {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(agent_port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool refused = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0;
    ::close(fd);
    return refused;
  }, std::chrono::seconds(5)));
}

// Local tunnels through the OpenSSH tunnel master against the real sshd fixture: connections the
// master carries are byte-exact both ways, with half-closes either way (the remote side's EOF
// reaches a local peer that is still writing); a refused remote port ends the connection; closing
// the tunnel ends the connections the master carries; a dead master leaves the tunnel on the
// link's libssh2 channels; on a short link the master starts by default once a tunnel has carried
// bulk (never for light traffic: one login), with the tunnel when the threshold is 0 (`ferry
// tunnel`), and it goes with the link.
#define BOOST_TEST_MODULE openssh_tunnels
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <future>
#include <random>
#include <thread>

#include <boost/test/unit_test.hpp>

#include "helper/remote/ssh_endpoint.hpp"
#include "tests/integration/endpoint_options.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/stream_diff.hpp"
#include "tests/support/tcp_peers.hpp"
#include "tests/support/wait_for.hpp"

using namespace ferry::remote;
using namespace ferry::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct Connected {
  SshdFixture sshd;
  std::unique_ptr<SshEndpoint> endpoint;
  explicit Connected(int openssh_tunnels = 1, std::uint64_t after_bytes = kOpenSshTunnelAfterBytes) {
    ::unsetenv("FERRY_OPENSSH_TUNNELS");
    sshd.trust_host_key();
    SshEndpointOptions o = endpoint_options_for(sshd);
    o.openssh_tunnels = openssh_tunnels;
    o.openssh_tunnel_after_bytes = after_bytes;
    o.session.connect_timeout = 20s;  // nothing here is about timing: a loaded machine must not fail it
    endpoint = std::make_unique<SshEndpoint>(o);
    auto info = endpoint->connect(20s);
    if (!info) throw std::runtime_error(info.error().message + "\n" + sshd.log());
  }
  int forward_to(int remote_port) {
    ForwardSpec s;
    s.remote_host = "127.0.0.1";
    s.remote_port = remote_port;
    auto info = endpoint->open_forward(s);
    if (!info) throw std::runtime_error(info.error().message);
    return info->bound_port;
  }
};

// Sends `payload` and half-closes while reading the echo to EOF: "" when it came back whole.
std::string echo_stream(int port, const std::string& payload) {
  int fd = tcp_connect("127.0.0.1", port);
  if (fd < 0) return "connect failed";
  std::thread writer([&] {
    write_all_fd(fd, payload);
    ::shutdown(fd, SHUT_WR);
  });
  std::string got, ending = "EOF";
  try {
    got = read_to_eof(fd, 60s);
  } catch (const std::exception& e) {
    ending = e.what();
    ::shutdown(fd, SHUT_RDWR);
  }
  writer.join();
  ::close(fd);
  auto diff = describe_stream_difference(payload, got);
  return diff.empty() ? diff : diff + "; ended with " + ending;
}

}  // namespace

BOOST_AUTO_TEST_CASE(connections_through_the_master_are_byte_exact_both_ways) {
  Connected c;
  BOOST_REQUIRE_MESSAGE(c.endpoint->wait_openssh_tunnels(20s), c.sshd.log());
  BOOST_TEST(live_children_named("ssh").size() == 1u);
  EchoServer echo;
  const int port = c.forward_to(echo.port());
  std::vector<std::future<std::string>> streams;
  for (int i = 0; i < 8; ++i)
    streams.push_back(std::async(std::launch::async, [port, i] { return echo_stream(port, random_bytes<std::string>(8 << 20, i + 1)); }));
  for (auto& s : streams) {
    const std::string diff = s.get();
    BOOST_TEST(diff.empty(), diff);
  }
  BOOST_TEST(c.endpoint->tunnel_connections_through_openssh() == 8u);
  BOOST_TEST(echo.connections() == 8);
  auto list = c.endpoint->list_forwards();
  BOOST_REQUIRE(list.size() == 1u);
  BOOST_TEST(list[0].accepted == 8u);
}

BOOST_AUTO_TEST_CASE(the_remote_side_closing_first_reaches_a_local_peer_that_still_writes) {
  Connected c;
  BOOST_REQUIRE(c.endpoint->wait_openssh_tunnels(20s));
  const std::string banner = "bye " + random_bytes<std::string>(3 << 20, 9);
  LoopbackServer talker([&](int fd, int, const std::atomic<bool>&) { write_all_fd(fd, banner); });  // then shuts its write side
  const int port = c.forward_to(talker.port());
  int fd = tcp_connect("127.0.0.1", port);
  BOOST_REQUIRE(fd >= 0);
  // The local peer never half-closes: only the remote side's EOF can end this read.
  const std::string got = read_to_eof(fd, 20s);
  BOOST_TEST(describe_stream_difference(banner, got) == "");
  BOOST_TEST(write_all_fd(fd, "still open for writing"));  // a half-close, not a close
  ::close(fd);
  BOOST_TEST(c.endpoint->tunnel_connections_through_openssh() == 1u);
}

BOOST_AUTO_TEST_CASE(a_refused_remote_port_ends_the_connection_and_the_master_goes_on) {
  Connected c;
  BOOST_REQUIRE(c.endpoint->wait_openssh_tunnels(20s));
  const int closed_port = pick_free_port();
  const int port = c.forward_to(closed_port);
  int fd = tcp_connect("127.0.0.1", port);
  BOOST_REQUIRE(fd >= 0);
  BOOST_TEST(read_to_eof(fd, 20s).empty());
  ::close(fd);
  EchoServer echo;
  const int good = c.forward_to(echo.port());
  BOOST_TEST(echo_stream(good, "after a refusal") == "");
  BOOST_TEST(c.endpoint->tunnel_connections_through_openssh() == 2u);
}

BOOST_AUTO_TEST_CASE(closing_the_tunnel_ends_the_connections_the_master_carries) {
  Connected c;
  BOOST_REQUIRE(c.endpoint->wait_openssh_tunnels(20s));
  EchoServer echo;
  ForwardSpec s;
  s.remote_host = "127.0.0.1";
  s.remote_port = echo.port();
  auto info = c.endpoint->open_forward(s);
  BOOST_REQUIRE(info.has_value());
  std::vector<int> clients;
  for (int i = 0; i < 3; ++i) {
    int fd = tcp_connect("127.0.0.1", info->bound_port);
    BOOST_REQUIRE(fd >= 0);
    write_all_fd(fd, "ping");
    BOOST_TEST(read_exactly(fd, 4, 10s) == "ping");
    clients.push_back(fd);
  }
  BOOST_TEST(c.endpoint->tunnel_connections_through_openssh() == 3u);
  BOOST_TEST(c.endpoint->list_forwards()[0].live == 3u);
  BOOST_REQUIRE(c.endpoint->close_forward(info->id).has_value());
  for (int fd : clients) {
    BOOST_TEST(read_to_eof(fd, 10s).empty());
    ::close(fd);
  }
  BOOST_TEST(tcp_connect("127.0.0.1", info->bound_port) == -ECONNREFUSED);
}

BOOST_AUTO_TEST_CASE(a_dead_master_leaves_the_tunnel_on_the_link) {
  Connected c;
  BOOST_REQUIRE(c.endpoint->wait_openssh_tunnels(20s));
  EchoServer echo;
  const int port = c.forward_to(echo.port());
  int live = tcp_connect("127.0.0.1", port);
  BOOST_REQUIRE(live >= 0);
  write_all_fd(live, "ping");
  BOOST_TEST(read_exactly(live, 4, 10s) == "ping");
  auto masters = live_children_named("ssh");
  BOOST_REQUIRE(masters.size() == 1u);
  ::kill(masters[0], SIGKILL);
  BOOST_TEST(read_to_eof(live, 10s).empty());  // what it carried ends with it, as with ssh -L
  ::close(live);
  BOOST_REQUIRE(eventually([] { return live_children_named("ssh").empty(); }, 10s));  // its fds close before it is a zombie
  BOOST_TEST(!c.endpoint->wait_openssh_tunnels(1s));
  BOOST_TEST(echo_stream(port, random_bytes<std::string>(1 << 20, 3)) == "");  // over a libssh2 channel
  BOOST_TEST(c.endpoint->tunnel_connections_through_openssh() == 1u);
}

BOOST_AUTO_TEST_CASE(a_short_link_starts_the_master_once_a_tunnel_carries_bulk_and_it_goes_with_the_link) {
  {
    Connected c(-1);  // auto: loopback is a short link
    EchoServer echo;
    const int port = c.forward_to(echo.port());
    BOOST_TEST(echo_stream(port, "light") == "");  // a debugger's traffic: no second login
    BOOST_TEST(live_children_named("ssh").empty());
    BOOST_TEST(echo_stream(port, random_bytes<std::string>(40 << 20, 5)) == "");  // 80 MiB over the link's channels
    BOOST_TEST(c.endpoint->tunnel_connections_through_openssh() == 0u);
    BOOST_TEST(echo_stream(port, "starts it") == "");  // still the link's: the master is only starting
    BOOST_REQUIRE(eventually([] { return live_children_named("ssh").size() == 1u; }, 20s));
    BOOST_REQUIRE(c.endpoint->wait_openssh_tunnels(20s));
    BOOST_TEST(echo_stream(port, random_bytes<std::string>(1 << 20, 6)) == "");
    BOOST_TEST(c.endpoint->tunnel_connections_through_openssh() == 1u);
    c.endpoint->close();
    BOOST_TEST(live_children_named("ssh").empty(), "the tunnel master outlived the link");
  }
  Connected off(0);
  BOOST_TEST(!off.endpoint->wait_openssh_tunnels(1s));
  BOOST_TEST(live_children_named("ssh").empty());
  EchoServer echo;
  BOOST_TEST(echo_stream(off.forward_to(echo.port()), "libssh2") == "");
  BOOST_TEST(off.endpoint->tunnel_connections_through_openssh() == 0u);
}

BOOST_AUTO_TEST_CASE(with_no_threshold_the_master_starts_with_the_tunnel_and_carries_its_first_connection) {
  Connected c(-1, 0);  // auto on a short link, as `ferry tunnel` sets it
  BOOST_TEST(live_children_named("ssh").empty());  // no tunnel yet: no second login
  EchoServer echo;
  const int port = c.forward_to(echo.port());
  BOOST_REQUIRE(eventually([] { return live_children_named("ssh").size() == 1u; }, 20s));  // before any traffic
  BOOST_REQUIRE_MESSAGE(c.endpoint->wait_openssh_tunnels(20s), c.sshd.log());
  BOOST_TEST(echo_stream(port, random_bytes<std::string>(4 << 20, 7)) == "");
  BOOST_TEST(c.endpoint->tunnel_connections_through_openssh() == 1u);
}

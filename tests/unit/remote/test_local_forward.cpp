// LocalEndpoint's tunnels: loopback TCP relays on this machine (the `local` host). Echo through a
// local and a reverse tunnel with half-closes, the loopback-only refusal, a port in use named with
// its holder, and close ending live connections without leaking fds.
#define BOOST_TEST_MODULE local_forward
#include <boost/test/unit_test.hpp>

#include "helper/remote/local_endpoint.hpp"
#include "tests/support/tcp_peers.hpp"

using namespace ferry::remote;
using namespace ferry::test;
using namespace std::chrono_literals;

namespace {

std::string echo_once(int port, const std::string& payload) {
  int fd = tcp_connect("127.0.0.1", port);
  if (fd < 0) return "";
  write_all_fd(fd, payload);
  ::shutdown(fd, SHUT_WR);
  auto got = read_to_eof(fd, 10s);
  ::close(fd);
  return got;
}

}  // namespace

BOOST_AUTO_TEST_CASE(local_and_reverse_tunnels_relay_with_half_close) {
  EchoServer echo;
  LocalEndpoint e(LocalEndpointOptions{});
  ForwardSpec local;
  local.remote_host = "127.0.0.1";
  local.remote_port = echo.port();
  auto l = e.open_forward(local);
  BOOST_REQUIRE(l.has_value());
  BOOST_TEST(l->bound_port > 0);
  std::string big(3 << 20, 'z');
  BOOST_TEST(echo_once(l->bound_port, big) == big);

  ForwardSpec reverse;
  reverse.kind = ForwardKind::kReverse;
  reverse.remote_port = 0;
  reverse.local_port = echo.port();
  auto r = e.open_forward(reverse);
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(echo_once(r->bound_port, "reverse") == "reverse");
  auto list = e.list_forwards();
  BOOST_REQUIRE(list.size() == 2u);
  BOOST_TEST(list[0].accepted == 1u);
}

BOOST_AUTO_TEST_CASE(refusals_say_why) {
  LocalEndpoint e(LocalEndpointOptions{});
  ForwardSpec wide;
  wide.bind_address = "0.0.0.0";
  wide.remote_port = 9;
  auto w = e.open_forward(wide);
  BOOST_REQUIRE(!w.has_value());
  BOOST_TEST(w.error().message.find("loopback only") != std::string::npos);

  EchoServer holder;  // this process holds the port
  ForwardSpec taken;
  taken.local_port = holder.port();
  taken.remote_port = 9;
  auto t = e.open_forward(taken);
  BOOST_REQUIRE(!t.has_value());
  BOOST_TEST(t.error().message.find("in use by pid " + std::to_string(::getpid())) != std::string::npos, t.error().message);
}

BOOST_AUTO_TEST_CASE(close_ends_live_connections_and_frees_fds) {
  EchoServer echo;
  LocalEndpoint e(LocalEndpointOptions{});
  std::size_t before = open_fd_count();
  ForwardSpec spec;
  spec.remote_host = "127.0.0.1";
  spec.remote_port = echo.port();
  auto f = e.open_forward(spec);
  BOOST_REQUIRE(f.has_value());
  int fd = tcp_connect("127.0.0.1", f->bound_port);
  BOOST_REQUIRE(fd >= 0);
  write_all_fd(fd, "ping");
  BOOST_TEST(read_exactly(fd, 4, 5s) == "ping");
  BOOST_REQUIRE(e.close_forward(f->id).has_value());
  BOOST_TEST(read_to_eof(fd, 5s).empty());
  ::close(fd);
  BOOST_TEST(tcp_connect("127.0.0.1", f->bound_port) == -ECONNREFUSED);
  BOOST_TEST(settle_fd_count(before) == before);  // the echo server's end closes on its own thread
}

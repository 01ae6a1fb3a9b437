// ferry on a long link, simulated by bench/wan's delay relay (20 ms each way) in front of the real
// sshd: the link's round trip is measured and sizes the receive windows; a push of a big new file
// goes over bulk lanes, opened by themselves because the link is slow, and arrives byte-exact; a
// pull of it comes back byte-exact. The relay itself keeps order and adds its delay. A host
// remembered as far gets its lane connections opened beside the link's own handshake.
#define BOOST_TEST_MODULE long_link
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "bench/wan/delay_relay.hpp"
#include "helper/remote/round_trip_memory.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/ssh/session.hpp"
#include "helper/sync/sync_engine.hpp"
#include "tests/integration/endpoint_options.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using ferry::test::read_file;
using ferry::test::write_file;

namespace {

constexpr auto kOneWay = 20ms;

using ferry::test::random_bytes;

// The fixture's host once more, on the relay's port (and its key known there).
std::string relay_alias(const test::SshdFixture& f, int port) {
  f.add_client_config("Host far\n  HostName 127.0.0.1\n  Port " + std::to_string(port) + "\n  User " +
                      std::string(std::getenv("USER") ? std::getenv("USER") : "root") + "\n  IdentityFile " + f.client_key().string() +
                      "\n  IdentitiesOnly yes\n  UserKnownHostsFile " + f.known_hosts().string() + "\n  GlobalKnownHostsFile none\n");
  std::string line = read_file(f.known_hosts());
  line = line.substr(line.find(' '), line.find('\n') - line.find(' '));
  std::ofstream(f.known_hosts(), std::ios::app) << "[127.0.0.1]:" << port << line << "\n";
  return "far";
}

}  // namespace

BOOST_AUTO_TEST_CASE(windows_follow_the_bandwidth_delay_product_within_bounds) {
  BOOST_TEST(ssh::receive_window_for(0ms, 2u << 20) == 2u << 20);
  BOOST_TEST(ssh::receive_window_for(1ms, 2u << 20) == 2u << 20);  // a LAN: the window is not the cap
  BOOST_TEST(ssh::receive_window_for(9ms, 2u << 20) == 2u << 20);  // nor a loaded loopback's slow open
  BOOST_TEST(ssh::receive_window_for(50ms, 2u << 20) == 25'000'000u);
  BOOST_TEST(ssh::receive_window_for(2s, 2u << 20) == ssh::kMaxWindow);
}

BOOST_AUTO_TEST_CASE(the_relay_keeps_order_and_adds_its_delay) {
  // An echo server behind the relay.
  int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  BOOST_REQUIRE(::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(ls, 1) == 0);
  ::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len);
  std::thread echo([ls] {
    int c = ::accept(ls, nullptr, nullptr);
    char buf[65536];
    for (ssize_t n; (n = ::read(c, buf, sizeof buf)) > 0;)
      for (ssize_t off = 0; off < n;) off += ::write(c, buf + off, static_cast<std::size_t>(n - off));
    ::close(c);
  });
  bench::DelayRelay relay({ntohs(a.sin_port), kOneWay, 60s});
  int c = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in r = a;
  r.sin_port = htons(static_cast<uint16_t>(relay.port()));
  BOOST_REQUIRE(::connect(c, reinterpret_cast<sockaddr*>(&r), sizeof r) == 0);
  const std::string sent = random_bytes<std::string>(3u << 20, 5);
  const auto t0 = std::chrono::steady_clock::now();
  std::thread writer([&] {
    for (std::size_t off = 0; off < sent.size();) off += static_cast<std::size_t>(::write(c, sent.data() + off, sent.size() - off));
    ::shutdown(c, SHUT_WR);
  });
  std::string got;
  char buf[65536];
  for (ssize_t n; (n = ::read(c, buf, sizeof buf)) > 0;) {
    if (got.empty()) BOOST_TEST((std::chrono::steady_clock::now() - t0 >= 2 * kOneWay));  // there and back
    got.append(buf, static_cast<std::size_t>(n));
  }
  writer.join();
  echo.join();
  ::close(c);
  ::close(ls);
  BOOST_TEST((got == sent), "bytes reordered or lost: " << got.size() << " of " << sent.size());
}

BOOST_AUTO_TEST_CASE(a_slow_link_gets_lanes_and_big_files_cross_it_byte_exact_both_ways) {
  test::SshdFixture f;
  f.trust_host_key();
  bench::DelayRelay relay({f.port(), kOneWay, 300s});
  if (std::getenv("FERRY_TEST_DEBUG")) spdlog::set_level(spdlog::level::debug);
  remote::SshEndpointOptions o = test::endpoint_options_for(f);
  o.host = relay_alias(f, relay.port());
  o.reconnect = false;
  remote::SshEndpoint ep(o);
  auto info = ep.connect(60s);
  BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? "" : info.error().message));
  BOOST_TEST(ep.bulk_lanes() == static_cast<std::size_t>(remote::kAutoBulkLanes), "a 40 ms link should get lanes");

  const fs::path local = f.dir() / "local", remote = f.home() / "project";
  const std::string big = random_bytes<std::string>(24u << 20, 6);
  write_file(local / "ckpt.bin", big);
  sync::SyncOptions so;
  so.stream_above = 1u << 20;
  {
    sync::SyncEngine engine(ep, sync::SyncTarget{local, "", "far", "~/project", {}, {}});
    auto s = engine.push(so);
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    BOOST_TEST(s->errors.empty(), (s->errors.empty() ? "" : s->errors.front()));
  }
  BOOST_TEST((read_file(remote / "ckpt.bin") == big));
  BOOST_TEST(ep.lane_calls() > 0u, "no part went over a lane");

  // Back again: a new remote file pulled into an empty project.
  const std::string out = random_bytes<std::string>(20u << 20, 7);
  write_file(remote / "out" / "model.pt", out);
  const fs::path back = f.dir() / "back";
  fs::create_directories(back);
  {
    sync::SyncEngine engine(ep, sync::SyncTarget{back, "", "far", "~/project", {}, {}});
    auto s = engine.pull({"out/model.pt"}, so);
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    BOOST_TEST(s->errors.empty(), (s->errors.empty() ? "" : s->errors.front()));
  }
  BOOST_TEST((read_file(back / "out" / "model.pt") == out));
  ep.close();
}

// The first link to a host measures and remembers its round trip; the next push of a big new file
// (the walk beside the connect gives the hint, as `ferry sync` does) has its lane connections
// opened while the link's own is made, and the lanes use them; a host remembered as near gets none.
BOOST_AUTO_TEST_CASE(a_host_remembered_as_far_gets_its_lane_connections_opened_beside_the_link) {
  test::SshdFixture f;
  f.trust_host_key();
  bench::DelayRelay relay({f.port(), kOneWay, 300s});
  remote::SshEndpointOptions o = test::endpoint_options_for(f);
  o.host = relay_alias(f, relay.port());
  o.reconnect = false;
  o.session.connect_timeout = 20s;  // every early connection must open, also on a loaded CI machine
  const fs::path memory = o.round_trip_memory, local = f.dir() / "local", remote = f.home() / "project";
  sync::SyncOptions so;
  so.stream_above = 1u << 20;
  auto push_new_file = [&](const std::string& name, unsigned seed) {
    const std::string big = random_bytes<std::string>(12u << 20, seed);
    write_file(local / name, big);
    remote::SshEndpoint ep(o);
    sync::SyncEngine engine(ep, sync::SyncTarget{local, "", "far", "~/project", {}, {}});
    std::jthread walk([&] { engine.prepare_push(so); });  // beside the connect, as the CLI does
    auto info = ep.connect(60s);
    walk.join();
    BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? "" : info.error().message));
    auto s = engine.push(so);
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    BOOST_TEST(s->errors.empty(), (s->errors.empty() ? "" : s->errors.front()));
    BOOST_TEST((read_file(remote / name) == big));
    BOOST_TEST(ep.lane_calls() > 0u, "no part went over a lane");
    const std::size_t early = ep.early_connections_used();
    ep.close();
    return early;
  };

  BOOST_TEST(push_new_file("first.bin", 11) == 0u, "nothing was remembered yet");
  const auto remembered = nlohmann::json::parse(read_file(memory));
  BOOST_REQUIRE(remembered["hosts"].size() == 1u);
  const std::string key = remembered["hosts"].begin().key();
  const auto rtt = remote::remembered_round_trip(memory, key);
  BOOST_REQUIRE(rtt.has_value());
  BOOST_TEST(rtt->count() >= 2 * std::chrono::duration_cast<std::chrono::microseconds>(kOneWay).count());

  BOOST_TEST(push_new_file("second.bin", 12) == static_cast<std::size_t>(remote::kAutoBulkConnections),
             "every lane connection should have been opened early and used");

  BOOST_REQUIRE(remote::remember_round_trip(memory, key, 500us));  // as if it had moved next door
  BOOST_TEST(push_new_file("third.bin", 13) == 0u, "a near host opens nothing early");
}

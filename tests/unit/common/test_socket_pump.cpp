// SocketPump: two pumps joined by an in-memory "link" (each one's messages delivered to the other)
// carry a connection between two socket pairs: bytes arrive whole and in order both ways, no more
// than the window is ever in flight unacknowledged, half-closes travel, a peer not granting holds
// the reader back, and stop() ends a pump whose socket never closes.
#define BOOST_TEST_MODULE socket_pump
#include <boost/test/unit_test.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "common/socket_pump.hpp"
#include "tests/support/wait_for.hpp"

using ferry::SocketPump;

namespace {

SocketPump::Socket calls(int fd) {
  return {[fd](std::uint8_t* b, std::size_t n) { return static_cast<std::ptrdiff_t>(::recv(fd, b, n, 0)); },
          [fd](std::span<const std::uint8_t> s) {
            while (!s.empty()) {
              auto w = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
              if (w <= 0) return false;
              s = s.subspan(static_cast<std::size_t>(w));
            }
            return true;
          },
          [fd] { ::shutdown(fd, SHUT_WR); }, [fd] { ::shutdown(fd, SHUT_RDWR); }};
}

// Pump A holds socket pair a (the test uses a_outside), pump B pair b; A's messages go to B and back.
struct Pair {
  int a[2], b[2];
  std::unique_ptr<SocketPump> pa, pb;
  std::atomic<std::int64_t> in_flight_ab{0}, max_in_flight_ab{0};
  std::atomic<int> finished{0}, clean{0};
  explicit Pair(bool b_granted = true, std::size_t window = 256 << 10) {
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0);
    pa = std::make_unique<SocketPump>(
        calls(a[1]),
        SocketPump::Peer{[this](std::span<const std::uint8_t> d) {
                           const auto now = in_flight_ab += static_cast<std::int64_t>(d.size());
                           std::int64_t seen = max_in_flight_ab;
                           while (now > seen && !max_in_flight_ab.compare_exchange_weak(seen, now)) {}
                           pb->on_data({d.begin(), d.end()});
                           return true;
                         },
                         [this](std::uint64_t n) { return pb->on_ack(n), true; }, [this] { return pb->on_eof(), true; },
                         [this](bool c) { ++finished, clean += c; }},
        true, window);
    pb = std::make_unique<SocketPump>(
        calls(b[1]),
        SocketPump::Peer{[this](std::span<const std::uint8_t> d) { return pa->on_data({d.begin(), d.end()}), true; },
                         [this](std::uint64_t n) {
                           in_flight_ab -= static_cast<std::int64_t>(n);
                           return pa->on_ack(n), true;
                         },
                         [this] { return pa->on_eof(), true; }, [this](bool c) { ++finished, clean += c; }},
        b_granted, window);
  }
  ~Pair() {
    // Each pump's threads call into the other: both stop and end before either goes.
    for (auto* p : {pa.get(), pb.get()})
      if (p) p->stop();
    for (auto* p : {pa.get(), pb.get()})
      if (p) p->join();
    pa.reset();
    pb.reset();
    for (int fd : {a[0], a[1], b[0], b[1]}) ::close(fd);
  }
  void start() {
    pa->start();
    pb->start();
  }
};

std::string read_all(int fd) {
  std::string s;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) s.append(buf, static_cast<std::size_t>(n));
  return s;
}

bool write_all(int fd, const std::string& s) {
  for (std::size_t at = 0; at < s.size();) {
    auto w = ::write(fd, s.data() + at, s.size() - at);
    if (w <= 0) return false;
    at += static_cast<std::size_t>(w);
  }
  return true;
}

std::string random_bytes(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(bytes_cross_whole_both_ways_within_the_window_and_half_closes_travel) {
  Pair p;
  p.start();
  const std::string there = random_bytes(3u << 20, 1), back = random_bytes(1u << 20, 2);
  std::string got_there, got_back;
  std::thread reader_b([&] { got_there = read_all(p.b[0]); });
  std::thread reader_a([&] { got_back = read_all(p.a[0]); });
  std::thread writer_b([&] {
    BOOST_CHECK(write_all(p.b[0], back));
    ::shutdown(p.b[0], SHUT_WR);
  });
  BOOST_REQUIRE(write_all(p.a[0], there));
  ::shutdown(p.a[0], SHUT_WR);  // A's end of stream reaches B's socket as EOF, after every byte
  reader_b.join();
  writer_b.join();
  reader_a.join();
  BOOST_TEST(got_there.size() == there.size());
  BOOST_TEST((got_there == there));
  BOOST_TEST((got_back == back));
  BOOST_TEST(p.max_in_flight_ab.load() <= 256 << 10);
  // Both ends of stream came and everything was written: both pumps end clean (no close needed).
  BOOST_TEST(ferry::test::eventually([&] { return p.clean.load() == 2; }, std::chrono::seconds(5)));
  BOOST_TEST(p.max_in_flight_ab.load() > 0);
}

BOOST_AUTO_TEST_CASE(a_side_not_granted_reads_nothing_until_its_peer_acks) {
  Pair p(/*b_granted=*/false);
  p.start();
  BOOST_REQUIRE(write_all(p.b[0], "early"));
  // A's socket sees nothing while B waits for the grant (a pump that read at once would deliver
  // within a millisecond; 300 ms of nothing)...
  pollfd wait{p.a[0], POLLIN, 0};
  BOOST_TEST(::poll(&wait, 1, 300) == 0);
  // ...and everything once A's side grants the window.
  p.pb->on_ack(256 << 10);
  char buf[5];
  std::size_t have = 0;
  while (have < 5) {
    auto n = ::read(p.a[0], buf + have, 5 - have);
    BOOST_REQUIRE(n > 0);
    have += static_cast<std::size_t>(n);
  }
  BOOST_TEST(std::string(buf, 5) == "early");
}

BOOST_AUTO_TEST_CASE(stop_ends_a_pump_whose_socket_stays_open) {
  Pair p;
  p.start();
  p.pa->stop();
  p.pb->stop();
  p.pa->join();  // would hang if a thread kept waiting
  p.pb->join();
  BOOST_TEST(p.finished.load() == 2);
  BOOST_TEST(p.clean.load() == 0);  // cut short: the peers are to be told
}

// PortWatch on the real /proc: a listener opened by a process of the watched group is reported
// open (address and port as bound), one of another group is not, and the group's listener closing
// is reported; /proc/net/tcp{,6} rows are read field by field (LISTEN rows only, addresses in the
// kernel's word order).
#define BOOST_TEST_MODULE port_watch
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "remote-runtime/agent/run/port_watch.hpp"

using ferry::agent::run::parse_listening;
using ferry::agent::run::PortWatch;

namespace {

// A loopback listener on any free port: its socket and port.
int listen_any(int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 4) != 0) return -1;
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

// A child in a process group of its own that listens, says its port on a pipe and waits to be killed.
struct GroupListener {
  pid_t pid = -1;
  int port = 0;
  GroupListener() {
    int p[2];
    BOOST_REQUIRE(::pipe(p) == 0);
    pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      int port_here = 0;
      if (listen_any(port_here) < 0) ::_exit(1);
      (void)!::write(p[1], &port_here, sizeof port_here);
      for (;;) ::pause();
    }
    ::close(p[1]);
    BOOST_REQUIRE(::read(p[0], &port, sizeof port) == static_cast<ssize_t>(sizeof port));
    ::close(p[0]);
  }
  void stop() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      pid = -1;
    }
  }
  ~GroupListener() { stop(); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(listen_rows_are_read_field_by_field) {
  const std::string v4 =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 100 0 0 10 0\n"
      "   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 17 1 0 100 0 0 10 0\n"
      "   2: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 4243 1 0 20 4 30 10 -1\n";
  const auto rows = parse_listening(v4, false);
  BOOST_REQUIRE_EQUAL(rows.size(), 2u);  // the established connection is no listener
  BOOST_TEST(rows[0].address == "127.0.0.1");
  BOOST_TEST(rows[0].port == 8080);
  BOOST_TEST(rows[0].uid == 1000u);
  BOOST_TEST(rows[0].inode == 4242u);
  BOOST_TEST(rows[1].address == "0.0.0.0");
  BOOST_TEST(rows[1].port == 22);
  const std::string v6 =
      "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000000000000000000001000000:1770 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 99 1 0 100 0 0 10 0\n"
      "   1: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 98 1 0 100 0 0 10 0\n";
  const auto rows6 = parse_listening(v6, true);
  BOOST_REQUIRE_EQUAL(rows6.size(), 2u);
  BOOST_TEST(rows6[0].address == "::1");
  BOOST_TEST(rows6[0].port == 6000);
  BOOST_TEST(rows6[1].address == "::");
  BOOST_TEST(rows6[1].port == 80);
}

BOOST_AUTO_TEST_CASE(the_groups_listeners_open_and_close_others_are_not_seen) {
  GroupListener child;
  int mine_port = 0;
  const int mine = listen_any(mine_port);  // this test's own group's (made after the fork: the child has no copy)
  BOOST_REQUIRE(mine >= 0);
  PortWatch watch(child.pid);
  const auto opened = watch.poll();
  BOOST_REQUIRE_EQUAL(opened.size(), 1u);
  BOOST_TEST(opened[0].open);
  BOOST_TEST(opened[0].port == child.port);
  BOOST_TEST(opened[0].address == "127.0.0.1");
  BOOST_TEST(watch.poll().empty());  // nothing new
  child.stop();
  const auto closed = watch.poll();
  BOOST_REQUIRE_EQUAL(closed.size(), 1u);
  BOOST_TEST(!closed[0].open);
  BOOST_TEST(closed[0].port == child.port);
  ::close(mine);
}

BOOST_AUTO_TEST_CASE(a_poll_for_an_ended_run_reports_closes_only) {
  GroupListener child;
  PortWatch watch(child.pid);
  BOOST_TEST(watch.poll(/*look_for_new=*/false).empty());  // its listener is not looked for
  const auto opened = watch.poll();
  BOOST_REQUIRE_EQUAL(opened.size(), 1u);
  BOOST_TEST(opened[0].port == child.port);
  child.stop();
  const auto closed = watch.poll(/*look_for_new=*/false);
  BOOST_REQUIRE_EQUAL(closed.size(), 1u);
  BOOST_TEST(!closed[0].open);
  BOOST_TEST(closed[0].port == child.port);
}

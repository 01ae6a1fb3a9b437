// DaemonState (helper/server/daemon.hpp): what ends a daemon's wait, and what it reports.
#define BOOST_TEST_MODULE daemon_state
#include <boost/test/unit_test.hpp>

#include <thread>

#include "helper/server/daemon.hpp"

using ferry::server::DaemonState;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(an_editors_server_is_no_daemon) {
  DaemonState s;
  BOOST_TEST(!s.active());
  BOOST_TEST(!s.idle_seconds().has_value());
  s.activate(300s);
  BOOST_TEST(s.active());
  BOOST_TEST(*s.idle_seconds() == 300);
}

BOOST_AUTO_TEST_CASE(idle_past_the_idle_time_ends_the_wait) {
  DaemonState s;
  s.activate(0s);
  BOOST_TEST(s.wait({}) == "idle for 0 s");
}

BOOST_AUTO_TEST_CASE(an_open_connection_holds_an_idle_exit_off_and_a_stop_ends_it) {
  DaemonState s;
  s.activate(0s);
  s.connection_began();  // a command riding it: never idle meanwhile
  std::jthread stopper([&] { s.stop("ferry daemon stop"); });
  BOOST_TEST(s.wait({}) == "ferry daemon stop");
  s.stop("a second reason");
  BOOST_TEST(s.wait({}) == "ferry daemon stop", "the first reason is kept");
}

BOOST_AUTO_TEST_CASE(the_check_ends_it_with_its_reason) {
  DaemonState s;
  s.activate(3600s);
  int asked = 0;
  BOOST_TEST(s.wait([&] { return ++asked == 2 ? std::string("ferry.json is gone") : std::string(); }) == "ferry.json is gone");
  BOOST_TEST(asked == 2);
}

BOOST_AUTO_TEST_CASE(the_idle_time_counts_from_the_last_connection_end) {
  DaemonState s;
  s.activate(0s);
  s.connection_began();
  s.connection_ended();
  BOOST_TEST(s.wait({}) == "idle for 0 s");
}

BOOST_AUTO_TEST_CASE(draining_waits_for_the_open_connections) {
  DaemonState s;
  s.activate(300s);
  s.connection_began();  // the one that said ferry/stop, reading its answer
  std::jthread asker([&] { s.connection_ended(); });
  s.drain(30s);
  asker.join();
  s.drain(0ms);  // none open: at once
  BOOST_TEST(*s.idle_seconds() == 300);
}

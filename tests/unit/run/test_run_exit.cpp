// run_exit: remote exit -> ferry's exit status, signal names.
#define BOOST_TEST_MODULE run_exit
#include <boost/test/unit_test.hpp>

#include <csignal>

#include "helper/run/run_exit.hpp"

using namespace ferry::run;

BOOST_AUTO_TEST_CASE(exit_codes_and_signals_map_like_a_shell) {
  auto e = parse_run_exit({{"id", "r1"}, {"exitCode", 3}, {"endedAt", "2026-11-30T02:00:00.000Z"}, {"logBytes", 42}});
  BOOST_REQUIRE(e.has_value());
  BOOST_TEST(exit_status(*e) == 3);
  BOOST_TEST(e->log_bytes == 42u);
  BOOST_TEST(describe(*e) == "exit 3");
  auto s = parse_run_exit({{"id", "r1"}, {"signal", 9}, {"logBytes", 0}});
  BOOST_TEST(exit_status(*s) == 137);
  BOOST_TEST(describe(*s) == "signal KILL (9)");
  BOOST_TEST(exit_status(*parse_run_exit({{"id", "r1"}, {"exitCode", 0}})) == 0);
  BOOST_TEST(exit_status(*parse_run_exit({{"id", "r1"}})) == kFerryFailure);
  BOOST_TEST(!parse_run_exit({{"exitCode", 0}}).has_value());
  auto lost = parse_run_exit({{"id", "r1"}, {"lost", true}, {"logBytes", 5}});
  BOOST_TEST(lost->lost);
  BOOST_TEST(exit_status(*lost) == kFerryFailure);
  BOOST_TEST(describe(*lost).starts_with("lost"));
  BOOST_TEST(!parse_run_exit(json::array()).has_value());
}

BOOST_AUTO_TEST_CASE(signal_names_both_ways) {
  BOOST_TEST(*signal_number("INT") == SIGINT);
  BOOST_TEST(*signal_number("sigterm") == SIGTERM);
  BOOST_TEST(*signal_number("9") == 9);
  BOOST_TEST(*signal_number("SIG15") == 15);
  BOOST_TEST(!signal_number("BOGUS").has_value());
  BOOST_TEST(!signal_number("0").has_value());
  BOOST_TEST(!signal_number("").has_value());
  BOOST_TEST(signal_name(SIGKILL) == "KILL");
  BOOST_TEST(signal_name(63) == "63");
}

// Ctrl-C escalation: INT, TERM, then KILL for every further press.
#define BOOST_TEST_MODULE interrupt_escalation
#include <boost/test/unit_test.hpp>

#include "helper/run/interrupt_escalation.hpp"

using ferry::run::InterruptEscalation;

BOOST_AUTO_TEST_CASE(escalates_int_term_kill) {
  InterruptEscalation e;
  auto a = e.next("20261130-020000-abcd");
  BOOST_TEST(a.signal == "INT");
  BOOST_TEST(a.note == "sent SIGINT to run 20261130-020000-abcd; press Ctrl-C again to send SIGTERM");
  auto b = e.next("20261130-020000-abcd");
  BOOST_TEST(b.signal == "TERM");
  BOOST_TEST(b.note.find("SIGKILL") != std::string::npos);
  BOOST_TEST(e.next("x").signal == "KILL");
  BOOST_TEST(e.next("x").signal == "KILL");
  BOOST_TEST(e.presses() == 4);
}

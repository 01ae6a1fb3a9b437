// Wakeup and wait_any (common/wakeup.hpp) on both platforms (this test runs on Linux and under
// Wine): a raise from another thread ends a wait and names the wakeup, a lowered one does not, a
// timeout passes. StopRequests turns SIGINT and SIGTERM into its kinds on POSIX and puts the old
// handlers back; the Windows console handler cannot be driven under Wine (no console to send
// Ctrl-C to), so there its kinds are checked through note(), what the handler calls.
#define BOOST_TEST_MODULE wakeup
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <thread>

#include "common/wakeup.hpp"

using namespace std::chrono_literals;
using ferry::platform::StopKind;
using ferry::platform::StopRequests;
using ferry::platform::Wakeup;

BOOST_AUTO_TEST_CASE(a_raise_from_another_thread_ends_the_wait_and_names_its_wakeup) {
  Wakeup a, b;
  Wakeup* both[] = {&a, &b};
  std::thread raiser([&] { b.raise(); });
  BOOST_TEST(ferry::platform::wait_any(both, 10s) == 1);
  raiser.join();
  BOOST_TEST(b.take());
  BOOST_TEST(!b.take());  // lowered
  BOOST_TEST(!a.take());
}

BOOST_AUTO_TEST_CASE(a_raised_one_stays_raised_until_taken_and_a_lowered_one_times_out) {
  Wakeup a;
  Wakeup* one[] = {&a};
  BOOST_TEST(ferry::platform::wait_any(one, 50ms) == -1);
  a.raise();
  a.raise();  // twice is once
  BOOST_TEST(ferry::platform::wait_any(one, 0ms) == 0);
  BOOST_TEST(ferry::platform::wait_any(one, 0ms) == 0);
  BOOST_TEST(a.take());
  BOOST_TEST(ferry::platform::wait_any(one, 0ms) == -1);
}

BOOST_AUTO_TEST_CASE(stop_kinds_are_noted_terminate_over_interrupt_and_taken_once) {
  StopRequests stop;
  Wakeup* one[] = {&stop.wakeup()};
  StopRequests::note(StopKind::interrupt);
  BOOST_TEST(ferry::platform::wait_any(one, 10s) == 0);
  BOOST_TEST((stop.take() == StopKind::interrupt));
  BOOST_TEST((stop.take() == StopKind::none));
  StopRequests::note(StopKind::terminate);
  StopRequests::note(StopKind::interrupt);
  BOOST_TEST((stop.take() == StopKind::terminate));
  BOOST_TEST(ferry::platform::wait_any(one, 0ms) == -1);
}

#ifndef _WIN32
BOOST_AUTO_TEST_CASE(sigint_and_sigterm_become_stop_requests_and_the_old_handlers_come_back) {
  {
    StopRequests stop;
    Wakeup* one[] = {&stop.wakeup()};
    BOOST_REQUIRE(std::raise(SIGINT) == 0);
    BOOST_TEST(ferry::platform::wait_any(one, 10s) == 0);
    BOOST_TEST((stop.take() == StopKind::interrupt));
    BOOST_REQUIRE(std::raise(SIGTERM) == 0);
    BOOST_TEST(ferry::platform::wait_any(one, 10s) == 0);
    BOOST_TEST((stop.take() == StopKind::terminate));
  }
  struct sigaction now {};
  BOOST_REQUIRE(::sigaction(SIGINT, nullptr, &now) == 0);
  BOOST_TEST((now.sa_handler == SIG_DFL));
}
#endif

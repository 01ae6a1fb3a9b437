// The box build's output as progress: build.sh's stage lines, Ninja's [N/M] and Make's
// "Building CXX object" lines, the ETA from the translation units done so far, and the result.
#define BOOST_TEST_MODULE build_progress
#include <boost/test/unit_test.hpp>

#include "helper/train/build_progress.hpp"

using namespace ferry::training;
using namespace std::chrono_literals;
using Clock = BuildProgressParser::Clock;

BOOST_AUTO_TEST_CASE(ninja_steps_give_an_eta_from_the_units_done) {
  const auto t0 = Clock::time_point{};
  BuildProgressParser p(t0);
  BOOST_TEST(!p.feed("ferry-box: units 25", t0));
  BOOST_TEST(p.feed("ferry-box: stage configure", t0));
  BOOST_TEST(p.progress().stage == "configure");
  BOOST_TEST(!p.feed("-- The CXX compiler identification is GNU 12.2.0", t0 + 1s));
  BOOST_TEST(p.feed("ferry-box: stage compile", t0 + 10s));
  BOOST_TEST(p.feed("[1/29] Building CXX object a.o", t0 + 10s));
  BOOST_TEST(!p.progress().eta_seconds.has_value());  // nothing finished yet
  BOOST_TEST(p.feed("[5/29] Building CXX object b.o", t0 + 30s));
  BOOST_TEST(p.progress().done == 5);
  BOOST_TEST(p.progress().total == 29);  // Ninja's count wins over the unit count
  BOOST_TEST_REQUIRE(p.progress().eta_seconds.has_value());
  // 4 steps in 20 s: 5 s a step, 25 steps to go.
  BOOST_TEST(*p.progress().eta_seconds == 125.0);
  const auto bar = p.bar(100);
  BOOST_TEST(bar.find("5/29") != std::string::npos);
  BOOST_TEST(bar.find("about 2:05 left") != std::string::npos);
  BOOST_TEST(p.feed("ferry-box: ready /c/k-1.13.0/ferry-train", t0 + 200s));
  BOOST_TEST(p.progress().stage == "ready");
  BOOST_TEST(p.ready_path() == "/c/k-1.13.0/ferry-train");
}

BOOST_AUTO_TEST_CASE(make_counts_units_against_the_pack) {
  const auto t0 = Clock::time_point{};
  BuildProgressParser p(t0);
  p.feed("ferry-box: units 4", t0);
  BOOST_TEST(p.feed("[ 10%] Building CXX object x.o", t0 + 1s));
  BOOST_TEST(!p.feed("[ 20%] Linking CXX static library libx.a", t0 + 2s));
  BOOST_TEST(p.feed("[ 30%] Building CXX object y.o", t0 + 3s));
  BOOST_TEST(p.progress().done == 2);
  BOOST_TEST(p.progress().total == 4);
  BOOST_TEST(p.progress().percent() == 50);
}

BOOST_AUTO_TEST_CASE(another_helpers_build_is_waited_for_and_found) {
  BuildProgressParser p;
  BOOST_TEST(p.feed("ferry-box: waiting for another helper's build (the lock /c/.lock)"));
  BOOST_TEST(p.progress().stage == "waiting");
  BOOST_TEST(p.feed("ferry-box: ready /c/k-2.5.1/ferry-train (built by another helper)"));
  BOOST_TEST(p.ready_path() == "/c/k-2.5.1/ferry-train");
}

// Cost arithmetic: the classic p3.2xlarge example comes out to the cent, totals round once,
// money formats with thousands separators, durations parse, the host price resolves.
#define BOOST_TEST_MODULE cost_estimate
#include <boost/test/unit_test.hpp>

#include "helper/cloud/cost_estimate.hpp"

using namespace ferry::cloud;

BOOST_AUTO_TEST_CASE(p3_2xlarge_twenty_hours) {
  auto offers = find_by_instance(builtin_catalog(), "p3.2xlarge", "aws");
  BOOST_TEST_REQUIRE(offers.size() == 1u);
  auto e = estimate(rate_of(*offers.front()), 20);
  BOOST_TEST(e.on_demand_cents == 6120);
  BOOST_TEST_REQUIRE(e.spot_cents.has_value());
  BOOST_TEST(*e.spot_cents == 2040);
  BOOST_TEST(format_usd(e.on_demand_cents) == "$61.20");
  BOOST_TEST(format_usd(*e.spot_cents) == "$20.40");
  std::string text = format_estimate(e);
  BOOST_TEST(text.find("$3.06/h") != std::string::npos, text);
  BOOST_TEST(text.find("$61.20") != std::string::npos, text);
  BOOST_TEST(text.find("$1.02/h") != std::string::npos, text);
  BOOST_TEST(text.find("$20.40") != std::string::npos, text);
  BOOST_TEST(text.find("(66.7 % saved)") != std::string::npos, text);
  auto j = to_json(e);
  BOOST_TEST(j["onDemandUsd"].get<double>() == 61.2);
  BOOST_TEST(j["spotUsd"].get<double>() == 20.4);
  BOOST_TEST(j["spotSavedPercent"].get<double>() == 66.7);
}

BOOST_AUTO_TEST_CASE(rounding_and_formatting) {
  BOOST_TEST(cost_cents(3.06, 20) == 6120);       // 61.199999... in binary
  BOOST_TEST(cost_cents(0.1578, 1.5) == 24);      // 0.2367 -> 24 cents
  BOOST_TEST(cost_cents(98.32, 1000) == 9832000);
  BOOST_TEST(format_usd(9832000) == "$98,320.00");
  BOOST_TEST(format_usd(5) == "$0.05");
  BOOST_TEST(format_rate(0.1578) == "$0.1578/h");
  BOOST_TEST(format_rate(3.5) == "$3.50/h");
  BOOST_TEST(format_rate(0.526) == "$0.526/h");
  Rate bare{"custom price", 2.0, std::nullopt, std::nullopt};
  auto e = estimate(bare, 0.5);
  BOOST_TEST(e.on_demand_cents == 100);
  BOOST_TEST(!e.spot_cents.has_value());
  BOOST_TEST(format_estimate(e).find("spot") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(hours_parse) {
  BOOST_TEST(*parse_hours("20") == 20.0);
  BOOST_TEST(*parse_hours("1.5h") == 1.5);
  BOOST_TEST(*parse_hours("90m") == 1.5);
  BOOST_TEST(*parse_hours("2d") == 48.0);
  for (const char* bad : {"", "-2", "0", "abc", "5 weeks", "3x"}) {
    auto h = parse_hours(bad);
    BOOST_TEST(!h.has_value(), bad);
    if (!h) BOOST_TEST(h.error().find("90m") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(host_rate_from_instance_or_price) {
  HostPrice by_instance{"p3.2xlarge", std::nullopt, std::nullopt, std::nullopt, true};
  auto r = host_rate(by_instance, builtin_catalog());
  BOOST_TEST_REQUIRE(r.has_value());
  BOOST_TEST(billed_usd_per_hour(*r, by_instance) == 1.02);
  HostPrice own{"p3.2xlarge", std::nullopt, 2.5, std::nullopt, false};
  BOOST_TEST(billed_usd_per_hour(*host_rate(own, builtin_catalog()), own) == 2.5);
  HostPrice unknown{"p9.huge", std::nullopt, std::nullopt, std::nullopt, false};
  BOOST_TEST(!host_rate(unknown, builtin_catalog()).has_value());
}

// The typed cost/* messages (protocol/messages_cost.hpp): params decode with their defaults and
// pointer errors, results are {estimates} / {offers} around cloud's rows.
#define BOOST_TEST_MODULE messages_cost
#include <boost/test/unit_test.hpp>

#include "protocol/messages_cost.hpp"

using namespace ferry::protocol;

BOOST_AUTO_TEST_CASE(estimate_params_default_to_one_hour_and_no_selector) {
  CostEstimateParams p;
  BOOST_TEST(!from_json(json::object(), p).has_value());
  BOOST_TEST(p.hours == 1.0);
  BOOST_TEST(!p.any_selector());
  BOOST_TEST(!from_json(json::parse(R"({"gpu":"A100","provider":"aws","spotUsdPerHour":1.5,"hours":20})"), p).has_value());
  BOOST_TEST(p.any_selector());
  BOOST_TEST(*p.gpu == "A100");
  BOOST_TEST(*p.provider == "aws");
  BOOST_TEST(*p.spot_usd_per_hour == 1.5);
  BOOST_TEST(p.hours == 20.0);
  CostEstimateParams priced;
  BOOST_TEST(!from_json(json::parse(R"({"usdPerHour":3.06})"), priced).has_value());
  BOOST_TEST(priced.any_selector());
}

BOOST_AUTO_TEST_CASE(estimate_params_name_the_bad_field) {
  CostEstimateParams p;
  BOOST_TEST(from_json(json::parse(R"({"gpu":""})"), p)->pointer == "/gpu");
  BOOST_TEST(from_json(json::parse(R"({"usdPerHour":0})"), p)->pointer == "/usdPerHour");
  BOOST_TEST(from_json(json::parse(R"({"hours":"20h"})"), p)->pointer == "/hours");
  BOOST_TEST(from_json(json::array(), p)->pointer == "");
}

BOOST_AUTO_TEST_CASE(catalog_params_take_nothing_or_a_gpu) {
  CostCatalogParams p;
  BOOST_TEST(!from_json(json(nullptr), p).has_value());
  BOOST_TEST(!p.gpu.has_value());
  BOOST_TEST(!from_json(json::parse(R"({"gpu":"V100"})"), p).has_value());
  BOOST_TEST(*p.gpu == "V100");
  BOOST_TEST(from_json(json::parse(R"({"gpu":3})"), p)->pointer == "/gpu");
}

BOOST_AUTO_TEST_CASE(results_wrap_the_rows_and_an_empty_list_stays_an_array) {
  BOOST_TEST(to_json(CostEstimateResult{}) == json::parse(R"({"estimates":[]})"));
  BOOST_TEST(to_json(CostCatalogResult{}) == json::parse(R"({"offers":[]})"));
  const json row = json::parse(R"({"label":"custom price","hours":2,"onDemandUsd":6.12,"onDemandCents":612})");
  BOOST_TEST(to_json(CostEstimateResult{{row}}) == (json{{"estimates", json::array({row})}}));
}

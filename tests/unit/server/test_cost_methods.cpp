// cost/estimate and cost/catalog through a real server on pipes: the classic example, the
// project's price as default, validation errors with their pointer.
#define BOOST_TEST_MODULE cost_methods
#include <boost/test/unit_test.hpp>

#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::test::ServeClient;
using nlohmann::json;

BOOST_AUTO_TEST_CASE(estimate_catalog_and_errors) {
  ferry::test::TempDir dir("ferry-cost-methods");
  ::setenv("FERRY_GPU_CATALOG", (dir / "absent.json").c_str(), 1);
  ferry::test::write_file(dir / "ferry.json", R"({"name": "c", "host": "local", "price": {"usdPerHour": 2, "market": "onDemand"}})");
  ServeClient client(dir.path());
  BOOST_TEST(client.methods.dump().find("cost/estimate") != std::string::npos);

  auto r = client.call("cost/estimate", {{"instance", "p3.2xlarge"}, {"hours", 20}});
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  const json& e = r["result"]["estimates"][0];
  BOOST_TEST(e["onDemandUsd"].get<double>() == 61.2);
  BOOST_TEST(e["spotUsd"].get<double>() == 20.4);
  BOOST_TEST(e["spotSavedPercent"].get<double>() == 66.7);

  auto own = client.call("cost/estimate", {{"hours", 3}});  // the project's price
  BOOST_REQUIRE_MESSAGE(own.contains("result"), own.dump());
  BOOST_TEST(own["result"]["estimates"][0]["onDemandUsd"].get<double>() == 6.0);

  auto bad = client.call("cost/estimate", {{"hours", -1}, {"gpu", "T4"}});
  BOOST_REQUIRE(bad.contains("error"));
  BOOST_TEST(bad["error"]["code"] == -32602);
  BOOST_TEST(bad["error"]["message"].get<std::string>().find("/hours") != std::string::npos, bad.dump());
  auto two = client.call("cost/estimate", {{"gpu", "T4"}, {"usdPerHour", 1}});
  BOOST_REQUIRE(two.contains("error"));
  BOOST_TEST(two["error"]["message"].get<std::string>().find("exactly one of gpu") != std::string::npos, two.dump());

  auto cat = client.call("cost/catalog", {{"gpu", "H200"}});
  BOOST_REQUIRE_MESSAGE(cat.contains("result"), cat.dump());
  BOOST_TEST_REQUIRE(cat["result"]["offers"].size() >= 1u);
  BOOST_TEST(cat["result"]["offers"][0]["gpuMemoryGiB"].get<double>() == 141.0);
  ::unsetenv("FERRY_GPU_CATALOG");
}

// The GPU catalog: the built-in file's rows are all valid (source, date, positive memory and
// prices) and cover the GPUs the docs promise; bad rows are refused with their pointer; user file
// and ferry.json rows override built-in ones.
#define BOOST_TEST_MODULE gpu_catalog
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <set>

#include "helper/cloud/gpu_catalog.hpp"
#include "helper/deploy/project_config.hpp"
#include "tests/support/temp_dir.hpp"

using nlohmann::json;
using namespace ferry::cloud;
namespace fs = std::filesystem;

namespace {

json good_row() {
  return json{{"provider", "aws"}, {"instance", "p3.2xlarge"}, {"gpu", "V100"}, {"gpuMemoryGiB", 16},
              {"onDemandUsdPerHour", 2.5}, {"source", "my invoice"}, {"date", "2026-11-30"}};
}

using ferry::test::TempDir;

}  // namespace

BOOST_AUTO_TEST_CASE(builtin_file_every_row_valid_and_covers_the_promised_gpus) {
  std::ifstream in(FERRY_CATALOG_FILE);
  auto parsed = parse_catalog(json::parse(in), "gpu_catalog.json");
  BOOST_TEST_REQUIRE(parsed.has_value(), (parsed ? "" : parsed.error()));
  BOOST_TEST(parsed->size() == builtin_catalog().size());
  std::set<std::string> gpus;
  for (const auto& o : builtin_catalog()) {
    BOOST_TEST(!o.source.empty());
    BOOST_TEST(o.date.size() == 10u);
    BOOST_TEST(o.gpu_memory_gib > 0);
    BOOST_TEST(o.on_demand_usd_per_hour > 0);
    if (o.spot_usd_per_hour) BOOST_TEST(*o.spot_usd_per_hour < o.on_demand_usd_per_hour, o.instance);
    gpus.insert(o.gpu);
  }
  for (const char* g : {"T4", "V100", "A10G", "L4", "A100 40GB", "A100 80GB", "H100 80GB", "H200 141GB"})
    BOOST_TEST(gpus.count(g) == 1u, g);
}

BOOST_AUTO_TEST_CASE(bad_rows_refused_with_pointer) {
  auto with = [](const char* key, json value) {
    json r = good_row();
    if (value.is_null()) r.erase(key);
    else r[key] = value;
    return parse_offer(r, "/offers/3", "test");
  };
  BOOST_TEST(with("source", nullptr).error().starts_with("/offers/3/source:"));
  BOOST_TEST(with("date", nullptr).error().starts_with("/offers/3/date:"));
  BOOST_TEST(with("date", "30.11.2026").error().starts_with("/offers/3/date:"));
  BOOST_TEST(with("gpuMemoryGiB", 0).error().starts_with("/offers/3/gpuMemoryGiB:"));
  BOOST_TEST(with("onDemandUsdPerHour", -3.06).error().starts_with("/offers/3/onDemandUsdPerHour:"));
  BOOST_TEST(with("spotUsdPerHour", 0).error().starts_with("/offers/3/spotUsdPerHour:"));
  BOOST_TEST(with("gpuCount", 0).error().starts_with("/offers/3/gpuCount:"));
  BOOST_TEST(with("price", 1).error().starts_with("/offers/3/price: unknown key"));
  BOOST_TEST(parse_offer(good_row(), "/x", "t").has_value());
}

BOOST_AUTO_TEST_CASE(lookup_by_gpu_and_instance) {
  const auto& c = builtin_catalog();
  auto v100 = find_by_instance(c, "P3.2XLARGE");
  BOOST_TEST_REQUIRE(v100.size() == 1u);
  BOOST_TEST(v100.front()->on_demand_usd_per_hour == 3.06);
  auto a100 = find_by_gpu(c, "a100");
  auto a100_80 = find_by_gpu(c, "A100 80GB");
  BOOST_TEST(a100.size() > a100_80.size());
  for (const auto* o : a100_80) BOOST_TEST(o->gpu_memory_gib == 80);
  BOOST_TEST(find_by_gpu(c, "RTX 9999").empty());
}

BOOST_AUTO_TEST_CASE(user_file_and_project_rows_override) {
  TempDir dir("ferry-catalog");
  fs::path file = dir.path() / "catalog.json";
  json user_row = good_row();
  user_row["onDemandUsdPerHour"] = 2.0;
  std::ofstream(file) << json{{"offers", {user_row}}}.dump();
  ::setenv("FERRY_GPU_CATALOG", file.c_str(), 1);
  auto c = effective_catalog();
  BOOST_TEST_REQUIRE(c.has_value());
  BOOST_TEST(c->size() == builtin_catalog().size());  // replaced, not added
  BOOST_TEST(find_by_instance(*c, "p3.2xlarge").front()->on_demand_usd_per_hour == 2.0);
  BOOST_TEST(find_by_instance(*c, "p3.2xlarge").front()->origin == file.string());

  // ferry.json's rows win over the user file's, and new instances are added.
  json doc{{"gpuCatalog", {good_row(), json{{"provider", "me"}, {"instance", "box"}, {"gpu", "RTX 4090"},
                                             {"gpuMemoryGiB", 24}, {"onDemandUsdPerHour", 0.69},
                                             {"source", "invoice"}, {"date", "2026-11-01"}}}},
           {"price", {{"instance", "box"}}}};
  auto project = ferry::deploy::parse_project(doc, dir.path());
  BOOST_TEST_REQUIRE(project.has_value(), (project ? "" : project.error().to_string()));
  auto c2 = effective_catalog(project->gpu_catalog);
  BOOST_TEST_REQUIRE(c2.has_value());
  BOOST_TEST(c2->size() == builtin_catalog().size() + 1);
  BOOST_TEST(find_by_instance(*c2, "p3.2xlarge").front()->on_demand_usd_per_hour == 2.5);
  BOOST_TEST(find_by_instance(*c2, "box").front()->origin == "ferry.json");

  // A broken user file is an error naming it.
  std::ofstream(file) << R"({"offers": [{"provider": "x"}]})";
  auto broken = effective_catalog();
  BOOST_TEST_REQUIRE(!broken.has_value());
  BOOST_TEST(broken.error().find(file.string()) != std::string::npos);
  BOOST_TEST(broken.error().find("/offers/0/instance") != std::string::npos);
  ::unsetenv("FERRY_GPU_CATALOG");
}

BOOST_AUTO_TEST_CASE(project_price_must_name_a_known_instance) {
  TempDir dir("ferry-catalog");
  ::setenv("FERRY_GPU_CATALOG", (dir.path() / "none.json").c_str(), 1);
  auto unknown = ferry::deploy::parse_project(json{{"price", {{"instance", "p9.huge"}}}}, dir.path());
  BOOST_TEST_REQUIRE(!unknown.has_value());
  BOOST_TEST(unknown.error().pointer == "/price/instance");
  BOOST_TEST(unknown.error().message.find("ferry cost catalog") != std::string::npos);
  auto known = ferry::deploy::parse_project(json{{"price", {{"instance", "p3.2xlarge"}, {"market", "spot"}}}}, dir.path());
  BOOST_TEST_REQUIRE(known.has_value());
  BOOST_TEST(known->price->spot);
  ::unsetenv("FERRY_GPU_CATALOG");
}

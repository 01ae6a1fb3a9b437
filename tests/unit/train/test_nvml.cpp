// NVML through dlopen: with no driver it yields nothing and does not fail; with a stand-in
// library (fake_nvml, built next to this test) it reads every field, and a failed query leaves
// only that field empty.
#define BOOST_TEST_MODULE nvml
#include <boost/test/unit_test.hpp>

#include <dlfcn.h>

#include <nlohmann/json.hpp>

#include "remote-runtime/train/nvml.hpp"

using namespace ferry::train;

BOOST_AUTO_TEST_CASE(absent_library_is_empty) {
  BOOST_TEST(!Nvml::load("/nonexistent/libnvidia-ml.so.1").has_value());
  BOOST_TEST(!Nvml::load("libc.so.6").has_value());  // loads, but has no NVML symbols
}

BOOST_AUTO_TEST_CASE(this_machine) {
  // CI machines here have no NVIDIA driver; where one exists the readings must be sane.
  auto nvml = Nvml::load();
  if (nvml) {
    const auto count = nvml->device_count();
    BOOST_TEST_REQUIRE(count.has_value());
    for (const auto& s : nvml->sample_all()) {
      if (s.utilization_percent) BOOST_TEST(*s.utilization_percent <= 100.0);
      if (s.memory_used_bytes) BOOST_TEST(*s.memory_used_bytes <= *s.memory_total_bytes);
    }
  } else {
    BOOST_TEST(!nvml.has_value());
  }
}

BOOST_AUTO_TEST_CASE(fake_library_readings) {
  auto nvml = Nvml::load(FERRY_FAKE_NVML);
  BOOST_TEST_REQUIRE(nvml.has_value());
  BOOST_TEST(nvml->device_count().value_or(-1) == 2);
  auto s0 = nvml->sample(0);
  BOOST_TEST_REQUIRE(s0.has_value());
  BOOST_TEST(s0->name == "Fake H200");
  BOOST_TEST(s0->utilization_percent.value_or(-1) == 87.0);
  BOOST_TEST(s0->memory_total_bytes.value_or(0) == 141LL << 30);
  BOOST_TEST(s0->memory_used_bytes.value_or(0) == 19LL << 30);  // v2: without the reserved GiB
  BOOST_TEST(s0->power_watts.value_or(0) == 412.345, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(s0->temperature_c.value_or(0) == 64.0);
  auto s1 = nvml->sample(1);
  BOOST_TEST_REQUIRE(s1.has_value());
  BOOST_TEST(!s1->power_watts.has_value());  // not supported: omitted, the rest still read
  BOOST_TEST(s1->utilization_percent.value_or(-1) == 12.0);
  BOOST_TEST(s1->memory_used_bytes.value_or(0) == 20LL << 30);  // v1 fallback
  BOOST_TEST(!nvml->sample(2).has_value());
  BOOST_TEST(!nvml->sample(-1).has_value());
  BOOST_TEST(nvml->sample_all().size() == 2u);
  const auto j = to_json(*s1);
  BOOST_TEST(!j.contains("power_w"));
  BOOST_TEST(j["name"] == "Fake L4");
}

BOOST_AUTO_TEST_CASE(shutdown_on_destruction) {
  void* lib = dlopen(FERRY_FAKE_NVML, RTLD_NOW);
  BOOST_TEST_REQUIRE(lib != nullptr);
  auto initialised = reinterpret_cast<int (*)()>(dlsym(lib, "fake_nvml_initialised"));
  BOOST_TEST_REQUIRE(initialised != nullptr);
  const int before = initialised();
  {
    auto nvml = Nvml::load(FERRY_FAKE_NVML);
    BOOST_TEST_REQUIRE(nvml.has_value());
    BOOST_TEST(initialised() == before + 1);
    Nvml moved = std::move(*nvml);  // a moved-from Nvml must not shut down twice
    BOOST_TEST(moved.device_count().value_or(0) == 2);
  }
  BOOST_TEST(initialised() == before);
  dlclose(lib);
}

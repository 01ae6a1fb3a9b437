// `ferry advise`'s arithmetic: measurements from ferry-train's event lines (auto_batch probes,
// step timings, GPU memory), the memory and time margins, the cheapest fitting offers, and the
// laptop verdict at its two limits (2 h, 70 % of VRAM).
#define BOOST_TEST_MODULE gpu_advice
#include <boost/test/unit_test.hpp>

#include "helper/cloud/gpu_advice.hpp"

using namespace ferry::cloud;
constexpr std::uint64_t kGiB = 1ull << 30;

BOOST_AUTO_TEST_CASE(measures_from_events) {
  const std::string events =
      R"({"event":"auto_batch","result":{"probes":[{"batch":8,"fits":true,"peak_bytes":2147483648},{"batch":999,"fits":false,"peak_bytes":99999999999}]}})" "\n"
      R"({"event":"start","total_steps":36000,"step":0})" "\n"
      "not json\n"
      R"({"event":"step","step":100,"step_time_s":0.2,"gpus":[{"index":0,"mem_used_bytes":10737418240,"mem_total_bytes":17179869184}]})" "\n"
      R"({"event":"step","step":200,"step_time_s":0.1,"gpus":[{"index":0,"mem_used_bytes":9663676416,"mem_total_bytes":17179869184}]})" "\n"
      R"({"event":"step","step":300,"step_time_s":0.3})" "\n";
  auto m = measure_from_events(events);
  BOOST_REQUIRE_MESSAGE(m.has_value(), m.error());
  BOOST_TEST(m->total_steps == 36000);
  BOOST_TEST(m->step_time_s == 0.2);          // the median of 0.1, 0.2, 0.3
  BOOST_TEST(m->peak_bytes == 10 * kGiB);     // the largest that fitted: not the failed probe
  BOOST_TEST(*m->measured_vram_bytes == 16 * kGiB);
  BOOST_TEST(m->hours() == 2.0);
  BOOST_TEST(!measure_from_events("").has_value());
  BOOST_TEST(measure_from_events(R"({"event":"start","total_steps":5})").error().find("step") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(cheapest_fitting_offer_with_margins) {
  RunMeasure m;
  m.peak_bytes = 20 * kGiB;  // 24 GiB with the margin: T4 and V100 (16) are out, A10G/L4 (24) are in
  m.step_time_s = 0.5;
  m.total_steps = 36000;     // 5 h, 5.5 h with the margin
  auto a = advise(m, builtin_catalog(), std::nullopt);
  BOOST_TEST(a.hours == 5.5);
  BOOST_TEST(a.needed_bytes == 24 * kGiB);
  BOOST_REQUIRE(!a.fits.empty());
  for (const auto& e : a.fits) BOOST_TEST(e.rate.offer->gpu_memory_gib >= 24.0);
  for (std::size_t i = 1; i < a.fits.size(); ++i) BOOST_TEST(a.fits[i - 1].on_demand_cents <= a.fits[i].on_demand_cents);
  // The cheapest 24 GiB offer in the catalog: GCP's g2-standard-4 (L4) at $0.7068/h.
  BOOST_TEST(a.fits.front().rate.offer->instance == "g2-standard-4");
  BOOST_TEST(a.fits.front().on_demand_cents == cost_cents(0.7068, 5.5));
  m.peak_bytes = 200 * kGiB;
  BOOST_TEST(advise(m, builtin_catalog(), std::nullopt).fits.empty());
}

BOOST_AUTO_TEST_CASE(laptop_verdict) {
  RunMeasure m;
  m.peak_bytes = 5 * kGiB;
  m.step_time_s = 0.1;
  m.total_steps = 36000;  // 1 h
  auto ok = advise(m, builtin_catalog(), 8 * kGiB);  // 62.5 % of 8 GiB
  BOOST_TEST(ok.laptop->find("still enough") != std::string::npos, *ok.laptop);
  m.total_steps = 90000;  // 2.5 h
  auto slow = advise(m, builtin_catalog(), 8 * kGiB);
  BOOST_TEST(slow.laptop->find("no longer enough: the run takes 2.5 h") != std::string::npos, *slow.laptop);
  m.total_steps = 36000;
  m.peak_bytes = 6 * kGiB;  // 75 %
  auto full = advise(m, builtin_catalog(), 8 * kGiB);
  BOOST_TEST(full.laptop->find("75 % of the laptop GPU's memory") != std::string::npos, *full.laptop);
}

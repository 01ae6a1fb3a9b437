// The data-starvation advice: fires only when the condition is sustained over the window, once,
// then not again within the repeat interval; suggests workers and the tensor dataset; on CPU the
// data-wait-only rule applies.
#define BOOST_TEST_MODULE advice
#include <boost/test/unit_test.hpp>

#include "remote-runtime/train/advice.hpp"

using namespace ferry::train;

namespace {

AdviceOptions options() {
  AdviceOptions o;
  o.window_s = 30;
  o.repeat_interval_s = 600;
  o.max_workers = 32;
  return o;
}

}  // namespace

BOOST_AUTO_TEST_CASE(sustained_starvation_fires_once) {
  DataStarvationAdvisor a({/*workers=*/2, DataSource::mnist, /*on_gpu=*/true}, options());
  int fired = 0;
  std::optional<AdviceRecord> first;
  for (int t = 0; t <= 120; t += 5) {
    if (auto adv = a.observe({static_cast<double>(t), 40.0, 0.5})) {
      ++fired;
      if (!first) {
        first = adv;
        BOOST_TEST(t >= 30);  // not before the window has been covered
      }
    }
  }
  BOOST_TEST(fired == 1);
  BOOST_TEST_REQUIRE(first.has_value());
  BOOST_TEST(first->kind == "data_starvation");
  BOOST_TEST(first->suggested_workers.value_or(0) == 5);  // ceil(2 * 1.25 / 0.5)
  BOOST_TEST(first->suggest_tensor_dataset);
  BOOST_TEST(first->gpu_util_percent.value_or(0) == 40.0);
  BOOST_TEST(first->message.find("data.workers = 5") != std::string::npos, first->message);
  BOOST_TEST(first->message.find("ferry-train pack") != std::string::npos, first->message);
  BOOST_TEST(first->message.find("40%") != std::string::npos, first->message);

  // After the repeat interval, a still-starving run is told again.
  int later = 0;
  for (int t = 700; t <= 800; t += 5) later += a.observe({static_cast<double>(t), 40.0, 0.5}).has_value();
  BOOST_TEST(later == 1);
}

BOOST_AUTO_TEST_CASE(busy_gpu_or_short_spike_is_quiet) {
  DataStarvationAdvisor busy({2, DataSource::synthetic, true}, options());
  for (int t = 0; t <= 200; t += 5) BOOST_TEST(!busy.observe({static_cast<double>(t), 95.0, 0.5}).has_value());

  DataStarvationAdvisor low_wait({2, DataSource::synthetic, true}, options());
  for (int t = 0; t <= 200; t += 5) BOOST_TEST(!low_wait.observe({static_cast<double>(t), 30.0, 0.05}).has_value());

  // A 15 s stall inside otherwise healthy training does not trip a 30 s window.
  DataStarvationAdvisor spike({2, DataSource::synthetic, true}, options());
  int fired = 0;
  for (int t = 0; t <= 300; t += 5) {
    const bool stalled = t >= 100 && t < 115;
    fired += spike.observe({static_cast<double>(t), stalled ? 10.0 : 95.0, stalled ? 0.9 : 0.02}).has_value();
  }
  BOOST_TEST(fired == 0);
}

BOOST_AUTO_TEST_CASE(cpu_rule_uses_data_wait_only) {
  DataStarvationAdvisor cpu({0, DataSource::tensor, /*on_gpu=*/false}, options());
  std::optional<AdviceRecord> adv;
  for (int t = 0; t <= 60 && !adv; t += 5) adv = cpu.observe({static_cast<double>(t), std::nullopt, 0.6});
  BOOST_TEST_REQUIRE(adv.has_value());
  BOOST_TEST(!adv->gpu_util_percent.has_value());
  BOOST_TEST(!adv->suggest_tensor_dataset);  // already memory-mapped
  BOOST_TEST(adv->suggested_workers.value_or(0) == 4);  // ceil(1 * 1.25 / 0.4)
  BOOST_TEST(adv->message.find("waiting for data") != std::string::npos);

  DataStarvationAdvisor cpu_ok({2, DataSource::synthetic, false}, options());
  for (int t = 0; t <= 120; t += 5) BOOST_TEST(!cpu_ok.observe({static_cast<double>(t), std::nullopt, 0.2}).has_value());
}

BOOST_AUTO_TEST_CASE(gpu_without_nvml_falls_back_to_wait_rule) {
  DataStarvationAdvisor a({2, DataSource::synthetic, true}, options());
  int fired = 0;
  for (int t = 0; t <= 60; t += 5) fired += a.observe({static_cast<double>(t), std::nullopt, 0.3}).has_value();
  BOOST_TEST(fired == 0);  // 0.3 is below the stricter wait-only threshold
  for (int t = 65; t <= 130; t += 5) fired += a.observe({static_cast<double>(t), std::nullopt, 0.5}).has_value();
  BOOST_TEST(fired == 1);
}

BOOST_AUTO_TEST_CASE(worker_suggestions) {
  BOOST_TEST(DataStarvationAdvisor::suggested_workers(4, 0.2, 64) == 7);   // ceil(4 * 1.25 / 0.8)
  BOOST_TEST(DataStarvationAdvisor::suggested_workers(4, 0.99, 64) == 50);  // wait clamped to 0.9
  BOOST_TEST(DataStarvationAdvisor::suggested_workers(8, 0.5, 8) == 8);    // capped by the cores
  BOOST_TEST(DataStarvationAdvisor::suggested_workers(0, 0.0, 8) == 2);

  // At the core cap with a tensor dataset there is nothing to add: the message says what is left.
  AdviceOptions o = options();
  o.max_workers = 4;
  DataStarvationAdvisor capped({4, DataSource::tensor, true}, o);
  std::optional<AdviceRecord> adv;
  for (int t = 0; t <= 60 && !adv; t += 5) adv = capped.observe({static_cast<double>(t), 20.0, 0.6});
  BOOST_TEST_REQUIRE(adv.has_value());
  BOOST_TEST(!adv->suggested_workers.has_value());
  BOOST_TEST(adv->message.find("data.prefetch") != std::string::npos, adv->message);
}

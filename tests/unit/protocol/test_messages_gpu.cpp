// The typed gpu/* messages (protocol/messages_gpu.hpp): gpu/watch's interval bounds, the status
// as the agent's answer plus the money keys (round-tripped), and gpu/sample's two shapes.
#define BOOST_TEST_MODULE messages_gpu
#include <boost/test/unit_test.hpp>

#include "protocol/messages_gpu.hpp"

using namespace ferry::protocol;

BOOST_AUTO_TEST_CASE(watch_params_default_to_a_second_and_refuse_out_of_range) {
  GpuWatchParams p;
  BOOST_TEST(!from_json(json(nullptr), p).has_value());
  BOOST_TEST(p.interval_ms == 1000);
  BOOST_TEST(!from_json(json::parse(R"({"intervalMs":200})"), p).has_value());
  BOOST_TEST(p.interval_ms == 200);
  BOOST_TEST(from_json(json::parse(R"({"intervalMs":199})"), p)->pointer == "/intervalMs");
  BOOST_TEST(from_json(json::parse(R"({"intervalMs":1.5})"), p)->pointer == "/intervalMs");
}

BOOST_AUTO_TEST_CASE(status_without_a_price_is_the_agents_answer_untouched) {
  const json agent = json::parse(R"({"available":true,"gpus":[{"index":0}],"host":{"cpuPercent":3}})");
  BOOST_TEST(to_json(GpuStatusResult{agent, std::nullopt, std::nullopt, std::nullopt}) == agent);
}

BOOST_AUTO_TEST_CASE(status_with_a_price_round_trips) {
  GpuStatusResult r{json::parse(R"({"available":true,"gpus":[]})"), 3.06, std::vector<GpuRunCost>{{"r1", 1.53}}, std::nullopt};
  json j = to_json(r);
  BOOST_TEST(j == json::parse(R"({"available":true,"gpus":[],"usdPerHour":3.06,"runs":[{"id":"r1","costUsd":1.53}]})"));
  GpuStatusResult back;
  BOOST_REQUIRE(!from_json(j, back).has_value());
  BOOST_TEST(back.agent == r.agent);
  BOOST_TEST(*back.usd_per_hour == 3.06);
  BOOST_REQUIRE(back.runs->size() == 1u);
  BOOST_TEST((*back.runs)[0].id == "r1");
  BOOST_TEST(to_json(back) == j);
  BOOST_TEST(from_json(json::parse(R"({"runs":[{"id":"r1"}]})"), back)->pointer == "/runs/0");
}

// A Slurm project's allocation rides where the price would: {slurm: {allocation: {..., secondsLeft}}},
// or {slurm: {}} when none is held.
BOOST_AUTO_TEST_CASE(status_with_a_slurm_allocation_round_trips) {
  GpuStatusResult r{json::parse(R"({"available":false})"), std::nullopt, std::nullopt,
                    GpuSlurmStatus{SlurmJobInfo{"12", "RUNNING", "None", "n1", "58:40", "1:00:00"}, 3520}};
  json j = to_json(r);
  BOOST_TEST(j["slurm"]["allocation"]["jobId"] == "12");
  BOOST_TEST(j["slurm"]["allocation"]["secondsLeft"] == 3520);
  GpuStatusResult back;
  BOOST_REQUIRE(!from_json(j, back).has_value());
  BOOST_REQUIRE(back.slurm && back.slurm->allocation);
  BOOST_TEST(back.slurm->allocation->nodes == "n1");
  BOOST_TEST(*back.slurm->seconds_left == 3520);
  BOOST_TEST(!back.agent.contains("slurm"));
  BOOST_TEST(to_json(back) == j);
  BOOST_TEST(to_json(GpuStatusResult{json::object(), std::nullopt, std::nullopt, GpuSlurmStatus{}}) == json::parse(R"({"slurm":{}})"));
  BOOST_TEST(from_json(json::parse(R"({"slurm":{"allocation":{"state":"RUNNING"}}})"), back)->pointer == "/slurm/allocation");
}

BOOST_AUTO_TEST_CASE(sample_is_a_status_or_an_error_and_watch_results_have_their_keys) {
  GpuSampleParams failed;
  failed.error = "no link";
  BOOST_TEST(to_json(failed) == json::parse(R"({"error":"no link"})"));
  GpuSampleParams ok;
  ok.status = GpuStatusResult{json::parse(R"({"gpus":[]})"), std::nullopt, std::nullopt, std::nullopt};
  BOOST_TEST(to_json(ok) == json::parse(R"({"gpus":[]})"));
  BOOST_TEST(to_json(GpuWatchResult{true, 500}) == json::parse(R"({"watching":true,"intervalMs":500})"));
  BOOST_TEST(to_json(GpuUnwatchResult{true}) == json::parse(R"({"wasWatching":true})"));
}

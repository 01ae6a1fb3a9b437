// The terminal view of a training run: the bar's step, loss, samples/s and ETA, and the lines
// kept for eval, checkpoint, interrupted, done and error.
#define BOOST_TEST_MODULE train_progress
#include <boost/test/unit_test.hpp>

#include <string>

#include "helper/train/train_progress.hpp"

using namespace ferry::training;

namespace {

TrainEvent ev(const char* line) {
  auto e = parse_train_event(line);
  BOOST_TEST_REQUIRE(e.has_value(), line);
  return *e;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(durations_and_rates) {
  BOOST_TEST(format_duration(7) == "0:07");
  BOOST_TEST(format_duration(754) == "12:34");
  BOOST_TEST(format_duration(3723) == "1:02:03");
  BOOST_TEST(format_duration(-1) == "?");
  BOOST_TEST(format_rate(812.4) == "812");
  BOOST_TEST(format_rate(51628.2) == "51.6k");
  BOOST_TEST(format_rate(1.2e6) == "1.20M");
}

BOOST_AUTO_TEST_CASE(no_bar_before_start) {
  TrainProgress p;
  BOOST_TEST(p.bar().empty());
  BOOST_TEST(!p.eta_seconds().has_value());
  BOOST_TEST(p.on_event(ev(R"({"event":"config","time":1,"valid":true,"config":{}})")).empty());
}

BOOST_AUTO_TEST_CASE(bar_shows_step_loss_rate_and_eta) {
  TrainProgress p;
  auto lines = p.on_event(ev(R"({"event":"start","time":100,"resumed":false,"step":0,"total_steps":300,"batch_size":64,"device":"cpu","precision":"fp32","parameters":9352,"world_size":1})"));
  BOOST_TEST_REQUIRE(lines.size() == 1u);
  BOOST_TEST(has(lines[0], "cpu"), lines[0]);
  BOOST_TEST(has(lines[0], "300 steps"), lines[0]);
  BOOST_TEST(has(p.bar(), "step 0/300"), p.bar());
  BOOST_TEST(!p.eta_seconds().has_value());  // nothing timed yet

  BOOST_TEST(p.on_event(ev(R"({"event":"step","time":110,"step":100,"loss":0.41821,"samples_per_s":51628.2})")).empty());
  // 100 steps in 10 s, 200 left: 20 s.
  BOOST_TEST_REQUIRE(p.eta_seconds().has_value());
  BOOST_TEST(*p.eta_seconds() == 20.0, boost::test_tools::tolerance(1e-9));
  const std::string bar = p.bar(100);
  BOOST_TEST(has(bar, "step 100/300"), bar);
  BOOST_TEST(has(bar, " 33%"), bar);
  BOOST_TEST(has(bar, "loss 0.4182"), bar);
  BOOST_TEST(has(bar, "51.6k samples/s"), bar);
  BOOST_TEST(has(bar, "ETA 0:20"), bar);
  BOOST_TEST(has(bar, "[##########....................]"), bar);  // 1/3 of 30 cells
  BOOST_TEST(bar.size() <= 100u);
  // Narrow terminals lose the bar, never the numbers' start.
  BOOST_TEST(p.bar(40).size() <= 40u);
  BOOST_TEST(p.bar(40).starts_with("step 100/300"));

  p.on_event(ev(R"({"event":"step","time":130,"step":300,"loss":null,"samples_per_s":50000})"));
  BOOST_TEST(has(p.bar(), "loss nan"), p.bar());
  BOOST_TEST(has(p.bar(), "100%"), p.bar());
  BOOST_TEST(*p.eta_seconds() == 0.0);
}

BOOST_AUTO_TEST_CASE(eta_of_a_resumed_run_counts_only_steps_since_the_resume) {
  TrainProgress p;
  auto lines = p.on_event(ev(R"({"event":"start","time":0,"resumed":true,"step":150,"total_steps":300})"));
  BOOST_TEST(has(lines.at(0), "resumed at step 150"), lines.at(0));
  p.on_event(ev(R"({"event":"step","time":5,"step":200,"loss":0.1,"samples_per_s":10})"));
  BOOST_TEST(*p.eta_seconds() == 10.0, boost::test_tools::tolerance(1e-9));  // 50 steps / 5 s, 100 left
}

BOOST_AUTO_TEST_CASE(lines_for_the_events_a_person_keeps) {
  TrainProgress p;
  p.on_event(ev(R"({"event":"start","time":0,"step":0,"total_steps":300})"));
  auto eval = p.on_event(ev(R"({"event":"eval","time":1,"step":100,"loss":0.0675,"accuracy":0.9731})"));
  BOOST_TEST(has(eval.at(0), "step 100"), eval.at(0));
  BOOST_TEST(has(eval.at(0), "97.3%"), eval.at(0));
  auto ck = p.on_event(ev(R"({"event":"checkpoint","time":2,"step":300,"path":"runs/q/checkpoints/ckpt-300.ferry","reason":"final"})"));
  BOOST_TEST(has(ck.at(0), "runs/q/checkpoints/ckpt-300.ferry"), ck.at(0));
  auto intr = p.on_event(ev(R"({"event":"interrupted","time":3,"step":120,"signal":"SIGINT"})"));
  BOOST_TEST(has(intr.at(0), "SIGINT"), intr.at(0));
  BOOST_TEST(has(intr.at(0), "--resume"), intr.at(0));
  auto done = p.on_event(ev(R"({"event":"done","time":4,"step":300,"epoch":5,"reason":"max_steps","elapsed_s":1.2,"final_loss":0.0112,"eval_loss":0.0674})"));
  BOOST_TEST(has(done.at(0), "300 steps"), done.at(0));
  BOOST_TEST(has(done.at(0), "0.0112"), done.at(0));
  BOOST_TEST(has(done.at(0), "eval loss 0.0674"), done.at(0));
  auto err = p.on_event(ev(R"({"event":"error","time":0,"stage":"config","pointer":"/optimizer/lr","message":"expected a number > 0"})"));
  BOOST_TEST(has(err.at(0), "config"), err.at(0));
  BOOST_TEST(has(err.at(0), "/optimizer/lr"), err.at(0));
  auto advice = p.on_event(ev(R"({"event":"advice","time":0,"kind":"data_starvation","message":"Try data.workers = 6"})"));
  BOOST_TEST(has(advice.at(0), "data.workers = 6"), advice.at(0));
  auto ab = p.on_event(ev(R"({"event":"auto_batch","time":0,"result":{"batch_size":1288,"probes":[{},{},{}]}})"));
  BOOST_TEST(has(ab.at(0), "1288"), ab.at(0));
  BOOST_TEST(has(ab.at(0), "3 probes"), ab.at(0));
  // Unknown events and fields are ignored (docs/train-events.md: consumers must).
  BOOST_TEST(p.on_event(ev(R"({"event":"future_thing","time":0,"x":1})")).empty());
}

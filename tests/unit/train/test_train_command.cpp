// `ferry train` end to end on the local host: the real ferry, ferry-agent (runs through its
// supervisor) and ferry-train on CPU with a tiny config. Exit status, the pulled plot.svg
// (well-formed XML, checked by a real XML parser), metrics.csv's header, and Ctrl-C: SIGINT to
// ferry reaches ferry-train, which checkpoints and exits 130, and --resume continues from there.
#define BOOST_TEST_MODULE train_command
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/spawned_process.hpp"
#include "tests/support/temp_dir.hpp"

using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct Project {
  ferry::test::TempDir dir{"ferry-train-cmd"};
  fs::path root = dir / "proj";
  fs::path cache = dir / "cache";

  Project() {
    ferry::test::write_file(root / "ferry.json",
                            json{{"name", "train-cmd-" + std::to_string(::getpid())},
                                 {"host", "local"},
                                 {"mappings", json::array({{{"local", "."}, {"remote", "~/proj"}}})},
                                 {"launch", json::array({{{"name", "tiny"}, {"kind", "train"}, {"config", "cfg/tiny.json"}}})}}
                                .dump(2));
  }
  fs::path write_config(int max_steps) const {
    json c = {{"model", {{"kind", "mlp"}, {"input_dim", 16}, {"hidden", {32}}, {"output_dim", 4}}},
              {"data", {{"source", "synthetic"}, {"task", "classification"}, {"samples", 512}, {"workers", 0}}},
              {"optimizer", {{"kind", "adamw"}, {"lr", 0.003}}},
              {"batch_size", 32},
              {"max_steps", max_steps},
              {"log_every_steps", 5},
              {"threads", 1},
              {"device", "cpu"},
              {"eval", {{"every_steps", 20}}},
              {"output_dir", "out"}};
    const fs::path file = root / "cfg" / "tiny.json";
    ferry::test::write_file(file, c.dump(2));
    return file;
  }
  std::unique_ptr<ferry::test::SpawnedProcess> ferry(std::vector<std::string> args) const {
    args.insert(args.begin(), FERRY_BIN);
    return std::make_unique<ferry::test::SpawnedProcess>(args, root.string(),
                                                         std::vector<std::pair<std::string, std::string>>{{"XDG_CACHE_HOME", cache.string()}});
  }
};

int exit_status(std::optional<int> status) {
  BOOST_TEST_REQUIRE(status.has_value());
  return WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
}

std::vector<std::string> all_lines(ferry::test::SpawnedProcess& p) {
  std::vector<std::string> lines;
  while (auto l = p.read_line(60s)) lines.push_back(*l);
  return lines;
}

std::vector<json> events(const std::vector<std::string>& lines) {
  std::vector<json> out;
  for (const auto& l : lines) {
    auto j = json::parse(l, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("event")) out.push_back(j);
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(train_runs_pulls_the_plot_and_exits_with_ferry_trains_status) {
  Project p;
  p.write_config(40);
  auto ferry = p.ferry({"train", "cfg/tiny.json"});
  const auto lines = all_lines(*ferry);
  BOOST_TEST_REQUIRE(exit_status(ferry->wait(60s)) == 0);
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  BOOST_TEST_MESSAGE(text);
  BOOST_TEST(text.find("step 40/40") != std::string::npos);
  BOOST_TEST(text.find("done: 40 steps") != std::string::npos);

  // The outputs came back next to the config, where its output_dir points locally.
  const fs::path out = p.root / "cfg" / "out";
  BOOST_TEST(text.find((out / "plot.svg").string()) != std::string::npos);
  BOOST_TEST_REQUIRE(fs::is_regular_file(out / "plot.svg"));
  ferry::test::SpawnedProcess xml({"/usr/bin/python3", "-c", "import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); print(r.tag)",
                                   (out / "plot.svg").string()});
  auto tag = xml.read_line(30s);
  BOOST_TEST(exit_status(xml.wait(30s)) == 0);
  BOOST_TEST_REQUIRE(tag.has_value());
  BOOST_TEST(tag->ends_with("svg"), *tag);
  const std::string csv = ferry::test::read_file(out / "metrics.csv");
  BOOST_TEST(csv.starts_with("step,epoch,loss,lr,samples_per_s,"), csv.substr(0, 80));
  BOOST_TEST(std::count(csv.begin(), csv.end(), '\n') >= 8);  // 8 step rows (every 5 of 40) and evals
  BOOST_TEST(fs::is_regular_file(out / "checkpoints" / "ckpt-0000000040.ferry"));

  // A bad config: ferry-train's status (2) is ferry's, and nothing is pulled.
  ferry::test::write_file(p.root / "cfg" / "bad.json", R"({"model": {"kind": "mlp"}, "optimizer": {"lr": -1}})");
  auto bad = p.ferry({"train", "cfg/bad.json", "--json"});
  const auto bad_events = events(all_lines(*bad));
  BOOST_TEST(exit_status(bad->wait(60s)) == 2);
  BOOST_TEST_REQUIRE(!bad_events.empty());
  BOOST_TEST(bad_events.back()["event"] == "error");
}

// ferry.json's launch entry names the config: the same run as `ferry train cfg/tiny.json`, started
// from a directory the config is not in.
BOOST_AUTO_TEST_CASE(train_launch_trains_the_entrys_config) {
  Project p;
  p.write_config(10);
  fs::create_directories(p.root / "elsewhere");
  std::vector<std::string> args = {FERRY_BIN, "--project", p.root.string(), "train", "--launch", "tiny", "--json"};
  ferry::test::SpawnedProcess ferry(args, (p.root / "elsewhere").string(),
                                    std::vector<std::pair<std::string, std::string>>{{"XDG_CACHE_HOME", p.cache.string()}});
  const auto got = events(all_lines(ferry));
  BOOST_TEST(exit_status(ferry.wait(60s)) == 0);
  BOOST_TEST_REQUIRE(!got.empty());
  BOOST_TEST(got.back()["event"] == "done");
  BOOST_TEST(fs::is_regular_file(p.root / "cfg" / "out" / "plot.svg"));
}

BOOST_AUTO_TEST_CASE(ctrl_c_checkpoints_with_130_and_resume_continues) {
  Project p;
  const fs::path config = p.write_config(1000000);
  auto ferry = p.ferry({"train", "cfg/tiny.json", "--json"});
  // --json: ferry-train's own lines. Interrupt once training is under way.
  bool stepping = false;
  while (auto l = ferry->read_line(60s)) {
    auto j = json::parse(*l, nullptr, false);
    if (!j.is_discarded() && j.value("event", "") == "step") {
      stepping = true;
      break;
    }
  }
  BOOST_TEST_REQUIRE(stepping);
  ferry->signal(SIGINT);
  const auto rest = events(all_lines(*ferry));
  BOOST_TEST_REQUIRE(exit_status(ferry->wait(60s)) == 130);
  std::optional<json> interrupted;
  for (const auto& e : rest)
    if (e["event"] == "interrupted") interrupted = e;
  BOOST_TEST_REQUIRE(interrupted.has_value());
  BOOST_TEST((*interrupted)["signal"] == "SIGINT");
  const int stopped_at = (*interrupted)["step"].get<int>();
  BOOST_TEST(stopped_at > 0);
  // The interrupted run's checkpoint came back too.
  BOOST_TEST(fs::is_directory(p.root / "cfg" / "out" / "checkpoints"));

  // A few more steps from where it stopped (ferry-train accepts a changed max_steps on resume).
  json c = json::parse(ferry::test::read_file(config));
  c["max_steps"] = stopped_at + 10;
  ferry::test::write_file(config, c.dump(2));
  auto resumed = p.ferry({"train", "cfg/tiny.json", "--resume", "--json"});
  const auto evs = events(all_lines(*resumed));
  BOOST_TEST_REQUIRE(exit_status(resumed->wait(60s)) == 0);
  std::optional<json> start, done;
  for (const auto& e : evs) {
    if (e["event"] == "start") start = e;
    if (e["event"] == "done") done = e;
  }
  BOOST_TEST_REQUIRE(start.has_value());
  BOOST_TEST((*start)["resumed"] == true);
  BOOST_TEST((*start)["step"].get<int>() == stopped_at);
  BOOST_TEST_REQUIRE(done.has_value());
  BOOST_TEST((*done)["step"].get<int>() == stopped_at + 10);
}

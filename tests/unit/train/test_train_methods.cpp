// train/start through ferry's JSON-RPC server on the local host: the real agent (runs through
// its supervisor) and ferry-train on CPU. The IDE gets train/metrics {runId, event} for every
// event in order, ending in `done`, then train/exited with the status and the pulled outputs.
#define BOOST_TEST_MODULE train_methods
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"

using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

BOOST_AUTO_TEST_CASE(train_start_streams_metrics_ending_in_done) {
  ferry::test::TempDir dir("ferry-train-serve");
  const fs::path root = dir / "proj";
  // The in-process server finds the agent and the trainer through these, and its sandbox here.
  ::setenv("FERRY_AGENT", FERRY_AGENT_BIN, 1);
  ::setenv("FERRY_TRAIN", FERRY_TRAIN_BIN, 1);
  ::setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
  ferry::test::write_file(root / "ferry.json",
                          json{{"name", "train-serve-" + std::to_string(::getpid())},
                               {"host", "local"},
                               {"mappings", json::array({{{"local", "."}, {"remote", "~/proj"}}})}}
                              .dump(2));
  json config = {{"model", {{"kind", "mlp"}, {"input_dim", 16}, {"hidden", {32}}, {"output_dim", 4}}},
                 {"data", {{"source", "synthetic"}, {"task", "classification"}, {"samples", 512}, {"workers", 0}}},
                 {"optimizer", {{"kind", "adamw"}, {"lr", 0.003}}},
                 {"batch_size", 32},
                 {"max_steps", 30},
                 {"log_every_steps", 10},
                 {"threads", 1},
                 {"device", "cpu"},
                 {"output_dir", "out"}};
  ferry::test::write_file(root / "cfg" / "tiny.json", config.dump(2));

  ferry::test::ServeClient c(root);
  bool listed = false;
  for (const auto& m : c.methods) listed |= m == "train/start";
  BOOST_TEST(listed);
  auto reply = c.call("train/start", {{"config", "cfg/tiny.json"}});
  BOOST_TEST_REQUIRE(reply.contains("result"), reply.dump());
  const std::string id = reply["result"]["runId"];
  BOOST_TEST(!id.empty());
  BOOST_TEST(reply["result"]["cwd"] == "cfg");

  auto exited = c.wait_notification([](const json& m) { return m["method"] == "train/exited"; }, 60s);
  BOOST_TEST_REQUIRE(exited.has_value());
  const json& x = (*exited)["params"];
  BOOST_TEST(x["runId"] == id);
  BOOST_TEST(x["status"] == 0);
  BOOST_TEST(x["exitCode"] == 0);
  bool plot = false;
  for (const auto& f : x["outputs"]) {
    BOOST_TEST(fs::is_regular_file(f.get<std::string>()), f.get<std::string>());
    plot |= f.get<std::string>().ends_with("cfg/out/plot.svg");
  }
  BOOST_TEST(plot);

  std::vector<std::string> kinds;
  std::vector<int> steps;
  for (const auto& n : c.notifications) {
    if (n["method"] != "train/metrics") continue;
    BOOST_TEST(n["params"]["runId"] == id);
    const json& e = n["params"]["event"];
    kinds.push_back(e["event"]);
    if (e["event"] == "step") steps.push_back(e["step"]);
  }
  BOOST_TEST_REQUIRE(!kinds.empty());
  BOOST_TEST(kinds.front() == "start");
  BOOST_TEST(kinds.back() == "done");
  BOOST_TEST(steps == (std::vector<int>{10, 20, 30}), boost::test_tools::per_element());

  // A config the box cannot have: a clear error, no run.
  auto bad = c.call("train/start", {{"config", (dir / "elsewhere.json").string()}});
  BOOST_TEST_REQUIRE(bad.contains("error"), bad.dump());
  BOOST_TEST(bad["error"]["code"] == -32602);
}

// train/start through ferry's JSON-RPC server on the local host: the real agent (runs through
// its supervisor) and ferry-train on CPU. The IDE gets train/metrics {runId, event} for every
// event in order, ending in `done`, then train/exited with the status and the pulled outputs.
#define BOOST_TEST_MODULE train_methods
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
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

// The same training from a plain LSP client's "Train on local" lens: events in a log file the
// editor is asked to show, progress on a server-made token ending with the exit, and the end as a
// message naming the pulled outputs.
BOOST_AUTO_TEST_CASE(a_train_lens_from_a_plain_client_logs_events_and_reports_the_end) {
  ferry::test::TempDir dir("ferry-train-lens");
  const fs::path root = dir / "proj";
  ::setenv("FERRY_AGENT", FERRY_AGENT_BIN, 1);
  ::setenv("FERRY_TRAIN", FERRY_TRAIN_BIN, 1);
  ::setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
  ferry::test::write_file(root / "ferry.json",
                          json{{"name", "train-lens-" + std::to_string(::getpid())},
                               {"host", "local"},
                               {"mappings", json::array({{{"local", "."}, {"remote", "~/proj"}}})}}
                              .dump(2));
  json config = {{"model", {{"kind", "mlp"}, {"input_dim", 8}, {"hidden", {16}}, {"output_dim", 2}}},
                 {"data", {{"source", "synthetic"}, {"task", "classification"}, {"samples", 256}, {"workers", 0}}},
                 {"optimizer", {{"kind", "adamw"}, {"lr", 0.01}}},
                 {"batch_size", 32},
                 {"max_steps", 20},
                 {"log_every_steps", 10},
                 {"threads", 1},
                 {"device", "cpu"},
                 {"output_dir", "out"}};
  ferry::test::write_file(root / "tiny.json", config.dump(2));
  const std::string uri = "file://" + (root / "tiny.json").string();
  ferry::test::ServeClient c(root, {{"window", {{"workDoneProgress", true}, {"showDocument", {{"support", true}}}}}},
                             "file://" + root.string());
  auto answer = [](const json& request) -> json {
    if (request["method"] == "window/showDocument") return {{"result", {{"success", true}}}};
    return {{"result", nullptr}};
  };
  auto lenses = c.call("textDocument/codeLens", {{"textDocument", {{"uri", uri}}}});
  BOOST_REQUIRE_MESSAGE(lenses.contains("result") && lenses["result"].size() == 1u, lenses.dump());
  BOOST_TEST(lenses["result"][0]["command"]["title"] == "Train on local");
  auto r = c.call("workspace/executeCommand", lenses["result"][0]["command"], answer);
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  auto end = c.wait_notification(
      [](const json& n) {
        return n["method"] == "window/showMessage" && n["params"]["message"].get<std::string>().find("training tiny.json") != std::string::npos;
      },
      60s, answer);
  BOOST_REQUIRE(end);
  const std::string message = (*end)["params"]["message"];
  BOOST_TEST(message.find("exited with status 0") != std::string::npos, message);
  BOOST_TEST(message.find("plot.svg") != std::string::npos, message);
  std::ifstream log(r["result"]["log"].get<std::string>());
  std::string text((std::istreambuf_iterator<char>(log)), {});
  BOOST_TEST(text.find("\"event\":\"done\"") != std::string::npos, text);
  int reports = 0;
  bool ended = false;
  for (const auto& n : c.notifications)
    if (n["method"] == "$/progress") {
      reports += n["params"]["value"]["kind"] == "report";
      ended |= n["params"]["value"]["kind"] == "end";
    }
  BOOST_TEST(reports >= 2);  // steps 10 and 20 at least
  BOOST_TEST(ended);
  bool shown = false;
  for (const auto& q : c.server_requests) shown |= q["method"] == "window/showDocument";
  BOOST_TEST(shown);
}

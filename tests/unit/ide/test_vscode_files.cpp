// The VS Code files: one shell task per launch entry running its ferry command; one attach
// configuration per debug entry, the shape `ferry debug --write-launch-json` writes plus the task
// that starts it; the debug task's background pattern matches the line ferry debug prints when
// debugpy is ready, and nothing before it.
#define BOOST_TEST_MODULE vscode_files
#include <boost/test/unit_test.hpp>

#include <regex>

#include "helper/debug/debugpy_command.hpp"
#include "helper/ide/vscode_files.hpp"

using namespace ferry::ide;
using nlohmann::json;

namespace {

IdeInputs inputs() {
  auto config = ferry::deploy::parse_project(json::parse(R"({"name": "p", "launch": [
        {"name": "train", "script": "train.py"},
        {"name": "eval it", "kind": "debug", "module": "pkg.eval"},
        {"name": "fit", "kind": "train", "config": "t.json"}]})"),
                                             "/home/me/p");
  BOOST_REQUIRE(config.has_value());
  IdeInputs in;
  in.project = *config;
  in.ferry = "/opt/ferry";
  in.mappings = {{"/home/me/p", "/home/u/ferry/p"}};
  return in;
}

bool search(const json& pattern, const std::string& line) {
  return std::regex_search(line, std::regex(pattern.get<std::string>(), std::regex::ECMAScript));
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_task_per_entry_runs_its_command) {
  const auto tasks = vscode_tasks(inputs());
  BOOST_REQUIRE_EQUAL(tasks.size(), 3u);
  BOOST_TEST(tasks[0]["label"] == "ferry: train");
  BOOST_TEST(tasks[0]["type"] == "shell");
  BOOST_TEST(tasks[0]["command"] == "/opt/ferry");
  BOOST_TEST(json(tasks[0]["args"]) == json::parse(R"(["run", "--launch", "train"])"));
  BOOST_TEST(json(tasks[0]["problemMatcher"]) == json::array());
  BOOST_TEST(json(tasks[1]["args"]) == json::parse(R"(["debug", "--launch", "eval it"])"));  // debugpy, no --pycharm
  BOOST_TEST(tasks[1]["isBackground"] == true);
  BOOST_TEST(json(tasks[2]["args"]) == json::parse(R"(["train", "--launch", "fit"])"));
  for (const auto& t : tasks) BOOST_TEST(t["options"]["cwd"] == "${workspaceFolder}");
}

BOOST_AUTO_TEST_CASE(debug_task_is_ready_when_ferry_debug_says_so) {
  const auto matcher = vscode_tasks(inputs())[1]["problemMatcher"];
  const std::string ready = std::string(ferry::debug::kReadyLinePrefix) + "127.0.0.1:5678 (run 20261201-1); tunnel 127.0.0.1:5678 -> 127.0.0.1:5678";
  BOOST_TEST(search(matcher["background"]["endsPattern"], ready));
  for (const std::string line : {"ferry debug: sync failed", "synced: 2 files sent", "x", ""}) {
    BOOST_TEST(!search(matcher["background"]["endsPattern"], line), line);
    BOOST_TEST(!search(matcher["background"]["beginsPattern"], line), line);
    BOOST_TEST(!search(matcher["pattern"]["regexp"], line), line);  // ferry prints no file locations
  }
  BOOST_TEST(matcher["background"]["activeBegin"] == true);
}

BOOST_AUTO_TEST_CASE(debug_entries_get_the_attach_configuration_and_their_task_first) {
  const IdeInputs in = inputs();
  const auto configs = vscode_launch_configurations(in);
  BOOST_REQUIRE_EQUAL(configs.size(), 1u);  // run and train entries have nothing to attach to
  // Written out, not built with the function under test: debugpy's attach entry on the tunnel's
  // port, the mapping's local root relative to the workspace, and the task that starts it.
  const json want = json::parse(R"({
    "name": "ferry: eval it",
    "type": "debugpy",
    "request": "attach",
    "connect": {"host": "127.0.0.1", "port": 5678},
    "pathMappings": [{"localRoot": "${workspaceFolder}", "remoteRoot": "/home/u/ferry/p"}],
    "justMyCode": true,
    "preLaunchTask": "ferry: eval it"
  })");
  BOOST_TEST(json(configs[0]) == want, json(configs[0]).dump());
  BOOST_TEST(configs[0]["connect"]["port"] == ferry::debug::kDefaultDebugpyPort);
  BOOST_TEST(launch_merge(in).array_key == "configurations");
  BOOST_TEST(tasks_merge(in).name_key == "label");
}

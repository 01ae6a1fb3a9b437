// helper/server/run_methods.cpp through a real Server (tests/support/serve_client.hpp) and the
// real agent on the local host: run/start streams run/output (text for UTF-8, base64 otherwise)
// and run/exited with the status; run/input reaches stdin; run/attach replays from an offset;
// run/list and errors for unknown ids.
#define BOOST_TEST_MODULE serve_run_methods
#include <boost/test/unit_test.hpp>

#include <cstdlib>

#include "protocol/file_uri.hpp"
#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using ferry::test::ServeClient;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

struct LocalProject {
  ferry::test::TempDir dir{"ferry-run-methods"};
  LocalProject() {
    ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
    ::setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);  // the sandbox and the run state dir
    ferry::test::write_file(dir / "proj" / "ferry.json",
                            json{{"name", "runs"}, {"host", "local"}, {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}}.dump());
    std::filesystem::create_directories(dir / "cache" / "ferry" / "local" / "runs" / "proj");
  }
};

// Collects a run's output notifications until run/exited; returns {stdout, stderr, exited}.
struct Streamed {
  std::string out, err;
  json exited;
};
Streamed collect(ServeClient& c, const std::string& id) {
  Streamed s;
  for (;;) {
    auto n = c.wait_notification(
        [&](const json& m) {
          auto method = m.value("method", "");
          return (method == "run/output" || method == "run/exited") && m["params"]["id"] == id;
        },
        30s);
    BOOST_REQUIRE_MESSAGE(n.has_value(), "no run/exited for " + id);
    const json& p = (*n)["params"];
    if ((*n)["method"] == "run/exited") {
      s.exited = p;
      return s;
    }
    std::string data = p.contains("text") ? p["text"].get<std::string>() : "b64:" + p["base64"].get<std::string>();
    (p["stream"] == "stderr" ? s.err : s.out) += data;
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(start_stream_input_attach_list) {
  LocalProject project;
  ServeClient c(project.dir / "proj");
  for (const char* m : {"run/start", "run/attach", "run/input", "run/signal", "run/list", "run/output", "run/exited"})
    BOOST_TEST((std::find(c.methods.begin(), c.methods.end(), m) != c.methods.end()), m);

  auto started = c.call("run/start", {{"argv", {"sh", "-c", "printf 'hi\\n'; printf '\\377\\000' >&2; exit 3"}}});
  BOOST_REQUIRE_MESSAGE(started.contains("result"), started.dump());
  std::string id = started["result"]["id"];
  auto s = collect(c, id);
  BOOST_TEST(s.out == "hi\n");
  BOOST_TEST(s.err == "b64:/wA=");  // not UTF-8: base64 of ff 00
  BOOST_TEST(s.exited["status"] == 3);
  BOOST_TEST(s.exited["exitCode"] == 3);

  auto cat = c.call("run/start", {{"argv", {"cat"}}});
  BOOST_REQUIRE(cat.contains("result"));
  std::string cat_id = cat["result"]["id"];
  BOOST_TEST(c.call("run/input", {{"id", cat_id}, {"text", "abc"}}).contains("result"));
  BOOST_TEST(c.call("run/input", {{"id", cat_id}, {"base64", "ZGVm"}, {"eof", true}}).contains("result"));
  auto cs = collect(c, cat_id);
  BOOST_TEST(cs.out == "abcdef");
  BOOST_TEST(cs.exited["status"] == 0);

  // A second attach from offset 0 replays the whole log, then the exit again.
  auto again = c.call("run/attach", {{"id", id}, {"offset", 0}});
  BOOST_REQUIRE_MESSAGE(again.contains("result"), again.dump());
  BOOST_TEST(again["result"]["state"] == "exited");
  auto replay = collect(c, id);
  BOOST_TEST(replay.out == "hi\n");
  BOOST_TEST(replay.exited["status"] == 3);

  auto list = c.call("run/list", json::object());
  BOOST_REQUIRE(list.contains("result"));
  bool found = false;
  for (const auto& r : list["result"]["runs"]) found = found || (r["id"] == id && r["exitCode"] == 3);
  BOOST_TEST(found, list.dump());

  auto unknown = c.call("run/signal", {{"id", "20990101-000000-beef"}, {"signal", "TERM"}});
  BOOST_TEST(unknown["error"]["code"] == -32602, unknown.dump());
  auto bad_signal = c.call("run/signal", {{"id", id}, {"signal", "BOGUS"}});
  BOOST_TEST(bad_signal["error"]["code"] == -32602);
  auto no_argv = c.call("run/start", {{"argv", json::array()}});
  BOOST_TEST(no_argv["error"]["code"] == -32602);
}

// A run no live ferry follows (its ferry was killed: PyCharm's second Stop) is named on the next
// connect, once, with what to do; a run another server follows is not.
BOOST_AUTO_TEST_CASE(runs_left_behind_are_named_on_the_next_connect) {
  LocalProject project;
  const json loop = {"sh", "-c", "trap '' INT; echo ready; while :; do sleep 0.05; done"};
  std::string older, newer;
  {
    ServeClient first(project.dir / "proj");
    older = first.call("run/start", {{"argv", loop}})["result"]["id"];
    newer = first.call("run/start", {{"argv", loop}})["result"]["id"];
  }  // this server goes, its runs go on
  auto question_about = [](const json& request) {
    std::string message = request["params"]["message"];
    std::vector<std::string> titles;
    for (const auto& a : request["params"]["actions"]) titles.push_back(a["title"]);
    return std::pair{message, titles};
  };
  // A plain LSP client: the newest first; Show Output mirrors it into .ferry/logs and opens that.
  ServeClient plain(project.dir / "proj", json{{"window", {{"showDocument", {{"support", true}}}}}});
  std::vector<std::pair<std::string, std::vector<std::string>>> asked;
  std::string shown;
  auto answer = [&](const json& request) -> json {
    if (request["method"] == "window/showDocument") {
      shown = request["params"]["uri"];
      return {{"result", {{"success", true}}}};
    }
    if (request["method"] != "window/showMessageRequest") return {{"result", nullptr}};
    asked.push_back(question_about(request));
    return {{"result", {{"title", asked.size() == 1 ? "Show Output" : "Leave It Running"}}}};
  };
  BOOST_REQUIRE(plain.call("run/list", json::object(), answer).contains("result"));
  BOOST_REQUIRE(plain.wait_request("window/showDocument", 30s, answer).has_value());
  BOOST_REQUIRE(plain.wait_request("window/showMessageRequest", 30s, answer).has_value());
  BOOST_REQUIRE(asked.size() == 2u);
  BOOST_TEST(asked[0].first.find("run " + newer) != std::string::npos, asked[0].first);
  BOOST_TEST(asked[0].first.find("no ferry following it") != std::string::npos, asked[0].first);
  BOOST_TEST((asked[0].second == std::vector<std::string>{"Show Output", "Stop It", "Leave It Running"}));
  BOOST_TEST(asked[1].first.find("run " + older) != std::string::npos, asked[1].first);
  const auto log = ferry::protocol::file_uri_to_fs_path(shown);
  BOOST_REQUIRE_MESSAGE(log.has_value(), shown);
  BOOST_TEST(log->string().find((project.dir / "proj" / ".ferry" / "logs").string()) == 0u, log->string());
  BOOST_TEST(ferry::test::eventually([&] { return ferry::test::read_file(*log).find("ready\n") != std::string::npos; }, 20s));

  // VS Code while the plain client follows `newer`, on a second checkout of the project (one
  // project has one serving server; this one maps to the same folder on the same host): only
  // `older` is named, and Stop It ends it.
  ferry::test::write_file(project.dir / "proj2" / "ferry.json", ferry::test::read_file(project.dir / "proj" / "ferry.json"));
  ServeClient vscode(project.dir / "proj2");
  std::vector<std::pair<std::string, std::vector<std::string>>> asked_vscode;
  auto stop_it = [&](const json& request) -> json {
    if (request["method"] != "window/showMessageRequest") return {{"result", nullptr}};
    asked_vscode.push_back(question_about(request));
    return {{"result", {{"title", "Stop It"}}}};
  };
  BOOST_REQUIRE(vscode.call("run/list", json::object(), stop_it).contains("result"));
  BOOST_REQUIRE(vscode.wait_request("window/showMessageRequest", 30s, stop_it).has_value());
  BOOST_REQUIRE(!asked_vscode.empty());
  BOOST_TEST(asked_vscode[0].first.find("run " + older) != std::string::npos, asked_vscode[0].first);
  BOOST_TEST(asked_vscode[0].first.find("The Runs view attaches to it") != std::string::npos);
  BOOST_TEST((asked_vscode[0].second == std::vector<std::string>{"Stop It", "Leave It Running"}));
  auto state_of = [&](const std::string& id) {
    auto listed = vscode.call("run/list", json::object(), stop_it);
    BOOST_TEST_REQUIRE(listed.contains("result"), listed.dump());
    for (const auto& r : listed["result"]["runs"])
      if (r["id"] == id) return r;
    return json::object();
  };
  BOOST_TEST(ferry::test::eventually([&] { return state_of(older).value("state", "") == "exited"; }, 20s));
  BOOST_TEST(state_of(older).value("signal", 0) == 15);
  BOOST_TEST(asked_vscode.size() == 1u);  // `newer` is followed
  BOOST_TEST(state_of(newer)["state"] == "running");
  BOOST_TEST(vscode.call("run/signal", {{"id", newer}, {"signal", "KILL"}}).contains("result"));
}

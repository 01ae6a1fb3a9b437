// helper/server/run_methods.cpp through a real Server (tests/support/serve_client.hpp) and the
// real agent on the local host: run/start streams run/output (text for UTF-8, base64 otherwise)
// and run/exited with the status; run/input reaches stdin; run/attach replays from an offset;
// run/list and errors for unknown ids.
#define BOOST_TEST_MODULE serve_run_methods
#include <boost/test/unit_test.hpp>

#include <cstdlib>

#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"

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

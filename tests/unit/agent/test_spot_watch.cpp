// Spot interruption notices through the real agent binary: a metadata endpoint played by a small
// HTTP server on 127.0.0.1 (tests/support/metadata_server.py) or a notice file. On the notice the
// runs whose command is ferry-train get SIGTERM (a stand-in script named ferry-train that
// "checkpoints" on TERM, so the test stays seconds long; the real trainer's checkpoint-on-SIGTERM
// is tested in tests/unit/train), other runs are left alone, and the notice is recorded.
#define BOOST_TEST_MODULE spot_watch
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/stat.h>

#include "protocol/agent_wire.hpp"
#include "remote-runtime/agent/autostop/spot_watch.hpp"
#include "remote-runtime/agent/run/run_store.hpp"
#include "tests/support/raw_agent.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

struct Box {
  ferry::test::TempDir tmp{"ferry-spot"};
  fs::path root = tmp / "root";
  fs::path state = tmp / "state";
  Box() {
    fs::create_directories(root / "bin");
    // Stands in for ferry-train: waits, and on SIGTERM writes its "checkpoint" and exits 143.
    ferry::test::write_file(root / "bin" / "ferry-train",
                            "#!/bin/sh\ntrap 'echo step-7 > \"" + (tmp / "checkpoint").string() + "\"; exit 143' TERM\n"
                            "while :; do sleep 0.05; done\n");
    ::chmod((root / "bin" / "ferry-train").c_str(), 0755);
  }
  ~Box() {
    std::error_code e;
    fs::remove(state / "spot" / "settings.json", e);
    for (fs::directory_iterator it(state / "runs", e), end; !e && it != end; it.increment(e))
      if (auto m = ferry::agent::run::read_json_file(it->path() / "meta.json")) ::kill(-m->value("pgid", 0LL), SIGKILL);
    if (!server_pid.empty()) ::kill(std::stoi(server_pid), SIGKILL);
  }
  std::string server_pid;
  int start_metadata_server() {
    const std::string cmd = "/usr/bin/python3 '" FERRY_METADATA_SERVER "' --port-file '" + (tmp / "port").string() +
                            "' --notice-file '" + (tmp / "notice").string() + "' >/dev/null 2>&1 & echo $! > '" +
                            (tmp / "pid").string() + "'";
    BOOST_REQUIRE(std::system(cmd.c_str()) == 0);
    BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(tmp / "port"); }, 20s));
    server_pid = ferry::test::read_file(tmp / "pid");
    return std::stoi(ferry::test::read_file(tmp / "port"));
  }
};

struct Agent {
  ferry::test::RawAgent raw;
  int next_id = 1;
  explicit Agent(const Box& b) : raw({FERRY_AGENT_PATH, "--root", b.root.string(), "--state-dir", b.state.string()}) {}
  json call(const std::string& method, json params) {
    const int id = next_id++;
    raw.send(ferry::protocol::Request{id, method, std::move(params)});
    while (true) {
      auto m = raw.next();
      if (auto* r = std::get_if<ferry::protocol::Response>(&m); r && r->id == ferry::protocol::RequestId(id)) {
        if (auto* e = std::get_if<ferry::protocol::ResponseError>(&r->outcome)) return json{{"error", e->message}};
        return std::get<json>(r->outcome);
      }
    }
  }
};

std::string run_state(const Box& b, const std::string& id) {
  ferry::agent::run::RunStore store(b.state);
  auto files = store.find(id);
  auto st = files ? ferry::agent::run::read_status(*files) : std::nullopt;
  return st ? st->state : "?";
}

}  // namespace

BOOST_AUTO_TEST_CASE(aws_style_notice_from_a_local_metadata_server_stops_training_runs) {
  Box b;
  const int port = b.start_metadata_server();
  Agent a(b);
  auto train = a.call("run/start", {{"argv", {"bin/ferry-train", "config.json"}}});
  auto other = a.call("run/start", {{"argv", {"/bin/sh", "-c", "while :; do sleep 0.05; done"}}});
  BOOST_REQUIRE_MESSAGE(train.contains("id") && other.contains("id"), train.dump() + other.dump());
  auto w = a.call("spot/watch", {{"source", "url"}, {"url", "http://127.0.0.1:" + std::to_string(port) + "/latest/meta-data/spot/instance-action"},
                                 {"pollSeconds", 0.2}});
  BOOST_REQUIRE_MESSAGE(w.value("watching", false), w.dump());
  // No notice yet (404s): both runs go on.
  BOOST_TEST(run_state(b, train["id"]) == "running");
  ferry::test::write_file(b.tmp / "notice", R"({"action": "terminate", "time": "2026-12-01T18:02:00Z"})");
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(b.tmp / "checkpoint"); }, 20s));
  BOOST_REQUIRE(ferry::test::eventually([&] { return run_state(b, train["id"]) == "exited"; }, 20s));
  BOOST_TEST(run_state(b, other["id"]) == "running");  // not a training run: left alone
  auto st = a.call("spot/status", json::object());
  BOOST_TEST(!st["watching"].get<bool>());
  BOOST_TEST(st["notice"]["runs"] == json::array({train["id"]}));
  BOOST_TEST(st["notice"]["notice"].get<std::string>().find("terminate") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(file_source_and_bad_params) {
  Box b;
  Agent a(b);
  BOOST_TEST(a.call("spot/watch", {{"source", "azure"}}).contains("error"));
  BOOST_TEST(a.call("spot/watch", {{"source", "url"}, {"url", "https://x/"}}).contains("error"));
  BOOST_TEST(a.call("spot/watch", {{"source", "file"}, {"path", "relative"}}).contains("error"));
  auto train = a.call("run/start", {{"argv", {"bin/ferry-train", "c.json"}}});
  BOOST_REQUIRE(a.call("spot/watch", {{"source", "file"}, {"path", (b.tmp / "notice").string()}, {"pollSeconds", 0.2}})
                    .value("watching", false));
  ferry::test::write_file(b.tmp / "notice", "preempted");
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(b.tmp / "checkpoint"); }, 20s));
  BOOST_REQUIRE(ferry::test::eventually([&] { return run_state(b, train["id"]) == "exited"; }, 20s));
}

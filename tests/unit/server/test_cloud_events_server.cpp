// The editor hears about the box's spot notices and autostop through a real server on pipes, the
// local sandbox's real agent and the real `ferry autostop` / `ferry spot` (whose watchers write
// the events the agent follows): a ferry client gets cloud/event and window/showMessage, a plain
// LSP client window/showMessage only. Also the message texts for each event.
#define BOOST_TEST_MODULE cloud_events_server
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include "helper/server/cloud_events.hpp"
#include "tests/support/serve_client.hpp"
#include "tests/support/spawned_process.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::test::ServeClient;
using nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct Project {
  ferry::test::TempDir dir{"ferry-cloud-server"};
  fs::path proj = dir / "proj";
  Project() {
    ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
    ::setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
    ::setenv("FERRY_NVIDIA_SMI", "/nonexistent/nvidia-smi", 1);
    ferry::test::write_file(proj / "ferry.json", R"({"name": "c", "host": "local"})");
  }
  ~Project() {  // no watcher outlives the test
    ferry({"autostop", "--cancel"});
    ferry({"spot", "--cancel"});
  }
  int ferry(std::vector<std::string> args) const {
    args.insert(args.begin(), FERRY_BIN);
    ferry::test::SpawnedProcess p(args, proj.string());
    auto st = p.wait(60s);
    return st && WIFEXITED(*st) ? WEXITSTATUS(*st) : -1;
  }
};

auto method_is(const std::string& m) {
  return [m](const json& n) { return n.value("method", "") == m; };
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_ferry_client_hears_autostop_and_a_spot_notice) {
  Project p;
  ServeClient client(p.proj);
  BOOST_REQUIRE(client.call("gpu/status", json::object()).contains("result"));  // the link is up

  BOOST_REQUIRE(p.ferry({"autostop", "30m", "--action", "notify"}) == 0);
  auto armed = client.wait_notification(method_is("cloud/event"), 20s);
  BOOST_REQUIRE(armed.has_value());
  BOOST_TEST((*armed)["params"]["source"] == "autostop");
  BOOST_TEST((*armed)["params"]["event"]["event"] == "armed");
  BOOST_TEST((*armed)["params"]["host"] == "local");
  BOOST_TEST((*armed)["params"]["message"].get<std::string>().starts_with("Autostop armed on local: notify after 30 min idle"));
  auto shown = client.wait_notification(method_is("window/showMessage"), 20s);
  BOOST_REQUIRE(shown.has_value());
  BOOST_TEST((*shown)["params"]["type"] == 3);

  const fs::path notice = p.dir / "notice";
  BOOST_REQUIRE(p.ferry({"spot", notice.string(), "--poll", "0.1"}) == 0);
  ferry::test::write_file(notice, "preempted");
  auto spot = client.wait_notification([](const json& n) { return n.value("method", "") == "cloud/event" && n["params"]["source"] == "spot"
                                                                  && n["params"]["event"]["event"] == "interrupted"; },
                                       20s);
  BOOST_REQUIRE(spot.has_value());
  BOOST_TEST((*spot)["params"]["message"].get<std::string>().starts_with("Spot interruption notice on local (file)"));
  auto warned = client.wait_notification([](const json& n) { return n.value("method", "") == "window/showMessage" && n["params"]["type"] == 2; },
                                         20s);
  BOOST_REQUIRE(warned.has_value());
}

BOOST_AUTO_TEST_CASE(a_plain_lsp_client_gets_show_message_only) {
  Project p;
  ServeClient client(p.proj, json::object());
  BOOST_REQUIRE(client.call("gpu/status", json::object()).contains("result"));
  BOOST_REQUIRE(p.ferry({"autostop", "2h", "--action", "notify"}) == 0);
  auto shown = client.wait_notification(method_is("window/showMessage"), 20s);
  BOOST_REQUIRE(shown.has_value());
  BOOST_TEST((*shown)["params"]["message"].get<std::string>().starts_with("Autostop armed on local: notify after 120 min idle"));
  BOOST_REQUIRE(p.ferry({"autostop", "--cancel"}) == 0);
  auto cancelled = client.wait_notification(method_is("window/showMessage"), 20s);
  BOOST_REQUIRE(cancelled.has_value());
  BOOST_TEST((*cancelled)["params"]["message"] == "Autostop cancelled on local.");
  for (const auto& n : client.notifications) BOOST_TEST(n.value("method", "") != "cloud/event");
}

BOOST_AUTO_TEST_CASE(message_texts) {
  using ferry::server::cloud_event_message;
  auto spot = cloud_event_message({{"source", "spot"}, {"event", {{"event", "interrupted"}, {"source", "aws"}, {"runs", {"r1", "r2"}}}}}, "gpu1");
  BOOST_REQUIRE(spot.has_value());
  BOOST_TEST(spot->text == "Spot interruption notice on gpu1 (aws): SIGTERM sent to ferry-train runs r1, r2; each writes a checkpoint "
                           "and stops. Continue on another box with `ferry resume r1 --host NEWBOX`.");
  BOOST_TEST((spot->type == ferry::server::MessageType::warning));
  auto fired = cloud_event_message({{"source", "autostop"}, {"event", {{"event", "fired"}, {"action", "stop"}}}}, "gpu1");
  BOOST_REQUIRE(fired.has_value());
  BOOST_TEST(fired->text == "Autostop fired on gpu1: stop.");
  auto idle = cloud_event_message({{"source", "autostop"}, {"event", {{"event", "idle"}, {"idleSeconds", 1800}, {"action", "notify"}}}}, "b");
  BOOST_REQUIRE(idle.has_value());
  BOOST_TEST(idle->text == "b has been idle for 30 min: autostop acts now (notify).");
  BOOST_TEST(!cloud_event_message({{"source", "spot"}, {"event", {{"event", "watching"}}}}, "b").has_value());
  BOOST_TEST(!cloud_event_message({{"source", "autostop"}, {"event", {{"event", "preStop"}}}}, "b").has_value());
  BOOST_TEST(!cloud_event_message(json::array(), "b").has_value());
}

// Run notifications through a real server and the local sandbox's real agent: a run that ends
// posts {event: run.completed | run.failed, ...} to the webhook in $FERRY_WEBHOOK_URL (a real
// receiver on 127.0.0.1); an unreachable webhook is a warning whose log line never holds the
// URL's secret parts.
#define BOOST_TEST_MODULE run_webhook
#include <boost/test/unit_test.hpp>

#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using ferry::test::ServeClient;
using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct Logs {
  std::ostringstream text;
  Logs() {
    auto logger = std::make_shared<spdlog::logger>("ferry", std::make_shared<spdlog::sinks::ostream_sink_mt>(text));
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
};

int start_receiver(const ferry::test::TempDir& dir) {
  const std::string cmd = "/usr/bin/python3 '" FERRY_RECEIVER "' --port-file '" + (dir / "port").string() + "' --out '" +
                          (dir / "hook.json").string() + "' >/dev/null 2>&1 &";
  BOOST_REQUIRE(std::system(cmd.c_str()) == 0);
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(dir / "port"); }, 20s));
  return std::stoi(ferry::test::read_file(dir / "port"));
}

json run_and_wait(ServeClient& client, const std::string& script) {
  auto started = client.call("run/start", {{"argv", {"/bin/sh", "-c", script}}});
  BOOST_REQUIRE_MESSAGE(started.contains("result"), started.dump());
  auto exited = client.wait_notification([](const json& n) { return n["method"] == "run/exited"; }, 30s);
  BOOST_REQUIRE(exited.has_value());
  return *exited;
}

}  // namespace

BOOST_AUTO_TEST_CASE(completion_and_failure_reach_the_webhook_and_the_url_stays_out_of_logs) {
  Logs logs;
  ferry::test::TempDir dir("ferry-run-webhook");
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
  ::setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
  ferry::test::write_file(dir / "proj" / "ferry.json", R"({"name": "hooked", "host": "local"})");
  const int port = start_receiver(dir);
  ::setenv("FERRY_WEBHOOK_URL", ("http://127.0.0.1:" + std::to_string(port) + "/services/T0SECRET?token=QSECRET").c_str(), 1);
  ServeClient client(dir / "proj");
  auto pushed = client.call("sync/push", json::object());  // makes the mapping root runs start in
  BOOST_REQUIRE_MESSAGE(pushed.contains("result"), pushed.dump());
  run_and_wait(client, "exit 0");
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(dir / "hook.json"); }, 20s));
  json hook = json::parse(ferry::test::read_file(dir / "hook.json"));
  json body = json::parse(hook["body"].get<std::string>());
  BOOST_TEST(body["event"] == "run.completed");
  BOOST_TEST(body["exitCode"] == 0);
  BOOST_TEST(body["project"] == "hooked");
  BOOST_TEST(hook["path"] == "/services/T0SECRET?token=QSECRET");

  // Nobody listens on port 1: the failure is logged, the secret is not.
  ::setenv("FERRY_WEBHOOK_URL", "http://127.0.0.1:1/services/T1SECRET?token=Q1SECRET", 1);
  run_and_wait(client, "exit 3");
  BOOST_REQUIRE(ferry::test::eventually([&] { return logs.text.str().find("run.failed not delivered") != std::string::npos; }, 20s));
  BOOST_TEST(logs.text.str().find("127.0.0.1:1/") != std::string::npos, logs.text.str());
  BOOST_TEST(logs.text.str().find("SECRET") == std::string::npos, logs.text.str());
  ::unsetenv("FERRY_WEBHOOK_URL");
}

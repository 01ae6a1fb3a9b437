// gpu/status, gpu/watch and gpu/unwatch through a real server on pipes and the local sandbox's
// real agent: the host half and the project's price on every answer, gpu/sample notifications
// while watched and none after gpu/unwatch's reply.
#define BOOST_TEST_MODULE gpu_methods_server
#include <boost/test/unit_test.hpp>

#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::test::ServeClient;
using nlohmann::json;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(status_watch_unwatch) {
  ferry::test::TempDir dir("ferry-gpu-server");
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
  ::setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
  ::setenv("FERRY_NVIDIA_SMI", "/nonexistent/nvidia-smi", 1);
  ferry::test::write_file(dir / "proj" / "ferry.json", R"({"name": "g", "host": "local", "price": {"usdPerHour": 2.5}})");
  ServeClient client(dir / "proj");
  auto r = client.call("gpu/status", json::object());
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  BOOST_TEST(!r["result"]["available"].get<bool>());
  BOOST_TEST(r["result"]["reason"].get<std::string>().starts_with("no NVIDIA GPU visible"));
  BOOST_TEST(r["result"]["host"]["cpu"].contains("perCore"));
  BOOST_TEST(r["result"]["usdPerHour"].get<double>() == 2.5);
  BOOST_TEST(r["result"]["runs"].is_array());

  auto w = client.call("gpu/watch", {{"intervalMs", 200}});
  BOOST_REQUIRE_MESSAGE(w.contains("result"), w.dump());
  for (int i = 0; i < 2; ++i) {
    auto sample = client.wait_notification([](const json& n) { return n["method"] == "gpu/sample"; }, 20s);
    BOOST_REQUIRE(sample.has_value());
    BOOST_TEST((*sample)["params"]["usdPerHour"].get<double>() == 2.5);
  }
  auto u = client.call("gpu/unwatch", json::object());
  BOOST_TEST(u["result"]["wasWatching"].get<bool>());
  // After the reply the thread is joined: a ping's answer comes with no sample after it.
  const auto before = client.notifications.size();
  client.call("ferry/ping", json::object());
  std::size_t samples = 0;
  for (std::size_t i = before; i < client.notifications.size(); ++i) samples += client.notifications[i]["method"] == "gpu/sample";
  BOOST_TEST(samples == 0u);
  BOOST_TEST(client.call("gpu/watch", {{"intervalMs", 5}})["error"]["code"] == -32602);
  ::unsetenv("FERRY_NVIDIA_SMI");
}

// The autostop notice's sender on its own: the box's real curl posting to a receiver on 127.0.0.1
// (tests/support/webhook_receiver.py), no curl at all, bad webhook params, and curl's config
// quoting. Nothing it returns shows the URL's secret path.
#define BOOST_TEST_MODULE autostop_webhook
#include <boost/test/unit_test.hpp>

#include <cstdlib>

#include "remote-runtime/agent/autostop/autostop_webhook.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;
namespace as = ferry::agent::autostop;

BOOST_AUTO_TEST_CASE(posts_through_curl_and_reports_the_status) {
  ferry::test::TempDir dir("ferry-autostop-webhook");
  const fs::path port_file = dir / "port", out = dir / "got.json";
  const std::string cmd = "/usr/bin/python3 '" FERRY_RECEIVER "' --port-file '" + port_file.string() + "' --out '" +
                          out.string() + "' >/dev/null 2>&1 &";
  BOOST_REQUIRE(std::system(cmd.c_str()) == 0);
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(port_file); }, 20s));
  const std::string port = ferry::test::read_file(port_file);
  const std::string url = "http://127.0.0.1:" + port + "/hook/SECRET1?t=\"SECRET2\\";
  json body = as::autostop_notice(90, "stop", "2026-12-01T10:00:00.000Z");
  body["note"] = "quotes \" and backslashes \\ and a\nnewline";
  auto r = as::send_webhook({url, {}}, body);
  BOOST_TEST(r.value("sent", false), r.dump());
  BOOST_TEST(r["status"] == 204);
  BOOST_TEST(r["to"] == "http://127.0.0.1:" + port + "/…");
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(out); }, 20s));
  json got = json::parse(ferry::test::read_file(out));
  BOOST_TEST(got["path"] == "/hook/SECRET1?t=\"SECRET2\\");  // the quote and backslash survived curl's config quoting
  BOOST_TEST(json::parse(got["body"].get<std::string>()) == body);  // byte-exact through curl's config quoting
  BOOST_TEST(body["event"] == "autostop.fired");
  BOOST_TEST(body["idleMinutes"] == 1.5);
}

BOOST_AUTO_TEST_CASE(no_curl_and_bad_params_say_why_without_the_url) {
  auto r = as::send_webhook({"https://hooks.example.com/T/SECRET", {}}, json::object(), "/nonexistent/curl");
  BOOST_TEST(!r.value("sent", true));
  BOOST_TEST(r["reason"].get<std::string>().find("no curl") != std::string::npos, r.dump());
  BOOST_TEST(r.dump().find("SECRET") == std::string::npos);
  auto bad = as::webhook_from_json(json{{"url", "ftp://x/SECRET"}});
  BOOST_REQUIRE(!bad.has_value());
  BOOST_TEST(bad.error().find("http://") != std::string::npos);
  BOOST_TEST(bad.error().find("SECRET") == std::string::npos);
  BOOST_TEST(!as::webhook_from_json(json{{"url", "http://x/a\nb"}}).has_value());
  BOOST_TEST(!as::webhook_from_json(json("http://x")).has_value());
}

BOOST_AUTO_TEST_CASE(curl_config_quoting) {
  BOOST_TEST(as::curl_config_quote(R"({"a":"x\ny"})") == R"("{\"a\":\"x\\ny\"}")");
}

// The libcurl webhook sender against real receivers on 127.0.0.1 (tests/support/webhook_receiver.py):
// plain http, https with a self-signed certificate this test makes and trusts through the CA
// file option, a refused certificate without it; the URL's secret path and query never appear in
// an error or in redact_url.
#define BOOST_TEST_MODULE webhook
#include <boost/test/unit_test.hpp>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "remote-runtime/train/webhook.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// Starts the receiver in the background; returns its port once it listens.
int start_receiver(const ferry::test::TempDir& dir, const std::string& name, const std::string& tls_args = "") {
  const fs::path port_file = dir / (name + ".port");
  const std::string cmd = "/usr/bin/python3 '" FERRY_RECEIVER "' --port-file '" + port_file.string() + "' --out '" +
                          (dir / (name + ".json")).string() + "' " + tls_args + " >/dev/null 2>&1 &";
  BOOST_REQUIRE(std::system(cmd.c_str()) == 0);
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(port_file); }, 20s));
  return std::stoi(ferry::test::read_file(port_file));
}

json received(const ferry::test::TempDir& dir, const std::string& name) {
  const fs::path out = dir / (name + ".json");
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(out); }, 20s));
  return json::parse(ferry::test::read_file(out));
}

// A self-signed certificate for 127.0.0.1, made here with the openssl CLI.
void make_certificate(const ferry::test::TempDir& dir) {
  const std::string cmd = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 "
                          "-addext subjectAltName=IP:127.0.0.1 -keyout '" + (dir / "key.pem").string() + "' -out '" +
                          (dir / "cert.pem").string() + "' >/dev/null 2>&1";
  BOOST_REQUIRE(std::system(cmd.c_str()) == 0);
}

const std::string kBody = R"({"event":"run.exited","run":"20261201-000000-abcd","exitCode":0})";

}  // namespace

BOOST_AUTO_TEST_CASE(plain_http) {
  ferry::test::TempDir dir("ferry-webhook");
  const int port = start_receiver(dir, "http");
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/hooks/T0SECRET/B0SECRET?token=QSECRET";
  auto status = ferry::webhook::post_json(url, kBody);
  BOOST_REQUIRE_MESSAGE(status.has_value(), status.error());
  BOOST_TEST(*status == 204);
  json r = received(dir, "http");
  BOOST_TEST(r["path"] == "/hooks/T0SECRET/B0SECRET?token=QSECRET");
  BOOST_TEST(r["body"] == kBody);
  BOOST_TEST(r["headers"]["Content-Type"] == "application/json");
  BOOST_TEST(ferry::webhook::redact_url(url) == "http://127.0.0.1:" + std::to_string(port) + "/…");
}

BOOST_AUTO_TEST_CASE(https_with_a_self_signed_receiver_trusted_by_ca_file) {
  ferry::test::TempDir dir("ferry-webhook-tls");
  make_certificate(dir);
  const std::string tls = "--cert '" + (dir / "cert.pem").string() + "' --key '" + (dir / "key.pem").string() + "'";
  // Not trusted: a certificate error that says how to fix it, and no secret.
  const int refused_port = start_receiver(dir, "refused", tls);
  const std::string refused_url = "https://127.0.0.1:" + std::to_string(refused_port) + "/x/SECRET?token=SECRET";
  ::unsetenv("FERRY_WEBHOOK_CA_FILE");
  auto refused = ferry::webhook::post_json(refused_url, kBody, {5s, "", "ferry"});
  BOOST_REQUIRE(!refused.has_value());
  BOOST_TEST(refused.error().find("FERRY_WEBHOOK_CA_FILE") != std::string::npos, refused.error());
  BOOST_TEST(refused.error().find("SECRET") == std::string::npos, refused.error());
  // Trusted through the option: delivered.
  const int port = start_receiver(dir, "https", tls);
  const std::string url = "https://127.0.0.1:" + std::to_string(port) + "/hooks/SECRET?token=SECRET";
  auto status = ferry::webhook::post_json(url, kBody, {10s, (dir / "cert.pem").string(), "ferry"});
  BOOST_REQUIRE_MESSAGE(status.has_value(), status.error());
  BOOST_TEST(*status == 204);
  BOOST_TEST(received(dir, "https")["body"] == kBody);
  // ...and through the environment variable (what ferry-train uses).
  const int env_port = start_receiver(dir, "env", tls);
  ::setenv("FERRY_WEBHOOK_CA_FILE", (dir / "cert.pem").c_str(), 1);
  auto via_env = ferry::webhook::post_json("https://127.0.0.1:" + std::to_string(env_port) + "/h", kBody);
  ::unsetenv("FERRY_WEBHOOK_CA_FILE");
  BOOST_REQUIRE_MESSAGE(via_env.has_value(), via_env.error());
  BOOST_TEST(*via_env == 204);
}

BOOST_AUTO_TEST_CASE(bad_urls_and_unreachable_receivers) {
  auto ftp = ferry::webhook::post_json("ftp://127.0.0.1/SECRET", kBody);
  BOOST_REQUIRE(!ftp.has_value());
  BOOST_TEST(ftp.error().find("http:// or https://") != std::string::npos);
  BOOST_TEST(ftp.error().find("SECRET") == std::string::npos);
  // Port 1 on loopback: nothing listens.
  auto down = ferry::webhook::post_json("http://user:SECRET@127.0.0.1:1/SECRET?k=SECRET", kBody, {5s, "", "ferry"});
  BOOST_REQUIRE(!down.has_value());
  BOOST_TEST(down.error().find("SECRET") == std::string::npos, down.error());
  BOOST_TEST(down.error().find("127.0.0.1:1") != std::string::npos, down.error());
}

// `ferry serve` (the Server over real pipes) against a real sshd: host/connect by alias with a
// known host; an unknown host makes the server ask host/confirmHostKey (accept records the key,
// reject fails naming the fingerprint); an encrypted key is unlocked through host/passphrase;
// host/stateChanged reports the link; doctor/run returns the doctor's lines.
#define BOOST_TEST_MODULE serve_ssh
#include <boost/test/unit_test.hpp>

#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/serve_client.hpp"

using ferry::test::SshdFixture;
using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// The IDE stand-in (tests/support/serve_client.hpp); every server request here is answered with a result.
using Client = ferry::test::ServeClient;
Client::Answer result_of(std::function<json(const json&)> f) {
  return [f = std::move(f)](const json& request) { return json{{"result", f(request)}}; };
}

void write_project(const SshdFixture& f, const std::string& host) {
  std::ofstream(f.dir() / "ferry.json") << json{{"name", "serve-ssh"},
                                                {"host", host},
                                                {"sshConfig", f.ssh_config().string()},
                                                {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}}
                                               .dump();
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct Env {
  Env() {
    ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
    ::unsetenv("SSH_AUTH_SOCK");  // only the fixture's keys
  }
};

bool has_state(const std::vector<json>& notes, const std::string& state) {
  for (const auto& n : notes)
    if (n["method"] == "host/stateChanged" && n["params"]["state"] == state) return true;
  return false;
}

}  // namespace

BOOST_GLOBAL_FIXTURE(Env);

BOOST_AUTO_TEST_CASE(connect_by_alias_to_a_known_host) {
  SshdFixture f;
  f.trust_host_key();
  write_project(f, f.alias());
  Client c(f.dir());
  for (const char* m : {"host/connect", "doctor/run", "host/confirmHostKey", "host/passphrase", "host/stateChanged"})
    BOOST_TEST((std::find(c.methods.begin(), c.methods.end(), m) != c.methods.end()), m);
  auto r = c.call("host/connect", json::object());
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  BOOST_TEST(r["result"]["host"] == f.alias());
  BOOST_TEST(r["result"]["remoteRoot"] == (f.home() / "proj").string());
  BOOST_TEST(r["result"]["os"] == "Linux");
  BOOST_TEST(!r["result"]["agentVersion"].get<std::string>().empty());
  BOOST_TEST(r["result"]["protocolVersion"].get<int>() > 0);
  BOOST_TEST(c.server_requests.empty());
  BOOST_TEST(has_state(c.notifications, "connecting"));
  BOOST_TEST(has_state(c.notifications, "connected"));
}

BOOST_AUTO_TEST_CASE(state_changes_follow_the_link_through_a_reconnect) {
  SshdFixture f;
  f.trust_host_key();
  write_project(f, f.alias());
  Client c(f.dir());
  auto r = c.call("host/connect", json::object());
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  auto state_is = [](const std::string& s) {
    return [s](const json& n) { return n["method"] == "host/stateChanged" && n["params"]["state"] == s; };
  };
  BOOST_REQUIRE(c.wait_notification(state_is("connected"), 1s));

  f.kill_all();  // the connection drops with the server: noticed at once
  auto dropped = c.wait_notification(state_is("reconnecting"), 15s);  // the drop itself, with its reason
  BOOST_REQUIRE(dropped);
  BOOST_TEST(!(*dropped)["params"]["message"].get<std::string>().empty());
  // sshd is down: the first attempt is refused and the next one scheduled after a delay.
  auto reconnecting = c.wait_notification(
      [](const json& n) { return n["method"] == "host/stateChanged" && n["params"].contains("attempt"); }, 15s);
  BOOST_REQUIRE(reconnecting);
  BOOST_TEST((*reconnecting)["params"]["state"] == "reconnecting");
  BOOST_TEST((*reconnecting)["params"]["host"] == f.alias());
  BOOST_TEST((*reconnecting)["params"]["attempt"].get<int>() >= 1, reconnecting->dump());
  BOOST_TEST((*reconnecting)["params"]["retryInMs"].get<long long>() > 0, reconnecting->dump());
  BOOST_TEST(!(*reconnecting)["params"]["message"].get<std::string>().empty());

  f.start();
  BOOST_TEST(c.wait_notification(state_is("connected"), 30s).has_value());
}

BOOST_AUTO_TEST_CASE(unknown_host_accepted_through_confirm_host_key) {
  SshdFixture f;
  write_project(f, f.alias());
  Client c(f.dir());
  auto r = c.call("host/connect", json::object(), result_of([](const json&) { return json{{"accept", true}}; }));
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  BOOST_REQUIRE_EQUAL(c.server_requests.size(), 1u);
  const auto& ask = c.server_requests[0];
  BOOST_TEST(ask["method"] == "host/confirmHostKey");
  BOOST_TEST(ask["id"].get<std::string>().starts_with("srv-"));
  BOOST_TEST(ask["params"]["host"] == f.alias());
  BOOST_TEST(ask["params"]["keyType"] == "ssh-ed25519");
  BOOST_TEST(ask["params"]["fingerprint"] == f.host_key_fingerprint());
  BOOST_TEST(read_file(f.known_hosts()).find("[127.0.0.1]:" + std::to_string(f.port())) != std::string::npos);

  // Now known: a second connect asks nothing.
  auto again = c.call("host/connect", json::object());
  BOOST_TEST(again.contains("result"), again.dump());
}

BOOST_AUTO_TEST_CASE(unknown_host_rejected_names_the_fingerprint) {
  SshdFixture f;
  write_project(f, f.alias());
  Client c(f.dir());
  auto r = c.call("host/connect", json::object(), result_of([](const json&) { return json{{"accept", false}}; }));
  BOOST_REQUIRE_MESSAGE(r.contains("error"), r.dump());
  BOOST_TEST(r["error"]["message"].get<std::string>().find(f.host_key_fingerprint()) != std::string::npos, r.dump());
  BOOST_TEST(r["error"]["data"]["kind"] == "hostKeyRejected");
  BOOST_TEST(read_file(f.known_hosts()).empty());
}

BOOST_AUTO_TEST_CASE(encrypted_key_unlocked_through_passphrase) {
  SshdFixture f;
  f.trust_host_key();
  const fs::path key = f.dir() / "enc_ed25519";
  ferry::test::run_command("ssh-keygen -q -t ed25519 -N 'open sesame' -f '" + key.string() + "'");
  {
    std::ofstream(f.dir() / "authorized_keys", std::ios::app) << read_file(key.string() + ".pub");
  }
  f.add_client_config("Host ferry-enc\n  HostName 127.0.0.1\n  Port " + std::to_string(f.port()) + "\n  User " +
                      ::getpwuid(::getuid())->pw_name + "\n  IdentityFile " + key.string() +
                      "\n  IdentitiesOnly yes\n  UserKnownHostsFile " + f.known_hosts().string() +
                      "\n  GlobalKnownHostsFile none\n");
  write_project(f, "ferry-enc");
  Client c(f.dir());
  auto r = c.call("host/connect", json::object(), result_of([&](const json& req) {
    BOOST_TEST(req["method"] == "host/passphrase");
    BOOST_TEST(req["params"]["keyFile"] == key.string());
    return json{{"passphrase", "open sesame"}};
  }));
  BOOST_TEST(r.contains("result"), r.dump());
  BOOST_TEST(c.server_requests.size() == 1u);
}

BOOST_AUTO_TEST_CASE(doctor_run_returns_lines) {
  SshdFixture f;
  f.trust_host_key();
  write_project(f, f.alias());
  Client c(f.dir());
  auto r = c.call("doctor/run", json::object());
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  BOOST_TEST(r["result"]["host"] == f.alias());
  const auto& checks = r["result"]["checks"];
  BOOST_REQUIRE(checks.size() > 3u);
  bool connection_passed = false;
  for (const auto& line : checks) {
    BOOST_TEST((line["status"] == "pass" || line["status"] == "warn" || line["status"] == "fail"));
    BOOST_TEST(line.contains("detail"));
    BOOST_TEST(line.contains("fix"));
    if (line["check"] == "connection" && line["status"] == "pass") connection_passed = true;
  }
  BOOST_TEST(connection_passed, checks.dump());

  auto local = c.call("doctor/run", {{"host", "local"}});
  BOOST_REQUIRE_MESSAGE(local.contains("result"), local.dump());
  BOOST_TEST(local["result"]["checks"][0]["status"] == "pass", local.dump());
}

// Every mapping of a project syncs over its one SSH login: the first is the agent's root, the
// others ("~/..." and an absolute path) are directories the same agent opens on its own; a save
// in one of them reaches it.
BOOST_AUTO_TEST_CASE(every_mapping_syncs_over_one_login) {
  ferry::test::SshdOptions o;
  o.log_level = "INFO";  // "Accepted publickey for ..." per login
  SshdFixture f(o);
  f.trust_host_key();
  const fs::path raw = f.home() / "datasets" / "raw";
  std::ofstream(f.dir() / "ferry.json") << json{{"name", "serve-maps"},
                                                {"host", f.alias()},
                                                {"sshConfig", f.ssh_config().string()},
                                                {"mappings", {{{"local", "src"}, {"remote", "~/proj"}},
                                                              {{"local", "data"}, {"remote", raw.string()}},
                                                              {{"local", "cfg"}, {"remote", "~/cfg"}}}}}
                                               .dump();
  for (const char* rel : {"src/a.py", "data/d.csv", "cfg/c.yaml"}) {
    fs::create_directories((f.dir() / rel).parent_path());
    std::ofstream(f.dir() / rel) << rel;
  }
  Client c(f.dir());
  auto pushed = c.call("sync/push", json::object());
  BOOST_REQUIRE_MESSAGE(pushed.contains("result"), pushed.dump());
  BOOST_TEST(pushed["result"]["filesSent"] == 3);
  BOOST_TEST(read_file(f.home() / "proj" / "a.py") == "src/a.py");
  BOOST_TEST(read_file(raw / "d.csv") == "data/d.csv");
  BOOST_TEST(read_file(f.home() / "cfg" / "c.yaml") == "cfg/c.yaml");

  std::ofstream(f.dir() / "data" / "d.csv") << "saved";
  c.notify("sync/fileSaved", {{"path", (f.dir() / "data" / "d.csv").string()}});
  auto flushed = c.call("sync/flush", json::object());
  BOOST_REQUIRE_MESSAGE(flushed.contains("result"), flushed.dump());
  BOOST_TEST(read_file(raw / "d.csv") == "saved");
  BOOST_TEST(f.accepted_logins() == 1, f.log());
}

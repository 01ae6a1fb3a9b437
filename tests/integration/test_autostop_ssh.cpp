// Autostop over a real sshd with the real ferry and ferry-agent: `ferry autostop 1s` arms the
// watchdog on the box and it fires (a harmless touch) once the CLI's link is gone; while ferry
// serve holds its link it never fires; ferry.json's autostop block is armed by ferry serve on
// connect; --status and --cancel report and disarm. With $FERRY_WEBHOOK_URL set, the box's
// watchdog posts the autostop.fired notice to a receiver on 127.0.0.1 through the box's curl, and
// the URL's secret token is in no file on either side and in no output.
#define BOOST_TEST_MODULE autostop_ssh
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using ferry::test::SshdFixture;
using nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct Env {
  Env() {
    ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
    ::unsetenv("SSH_AUTH_SOCK");
  }
};

struct Box {
  SshdFixture sshd;
  fs::path mark = sshd.home() / "fired";
  explicit Box(const json& autostop = json()) {
    sshd.trust_host_key();
    json cfg{{"name", "autostop-ssh"}, {"host", sshd.alias()}, {"sshConfig", sshd.ssh_config().string()},
             {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}};
    if (!autostop.is_null()) cfg["autostop"] = autostop;
    ferry::test::write_file(sshd.dir() / "ferry.json", cfg.dump());
  }
  ~Box() { ferry("autostop --cancel"); }  // nothing armed outlives the test
  struct Out {
    int status;
    std::string out, err;
  };
  Out ferry(const std::string& args) const {
    const fs::path o = sshd.dir() / "cli.out", e = sshd.dir() / "cli.err";
    const std::string cmd = "cd '" + sshd.dir().string() + "' && '" FERRY_BIN "' " + args + " </dev/null >'" + o.string() +
                            "' 2>'" + e.string() + "'";
    int rc = std::system(cmd.c_str());
    return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ferry::test::read_file(o), ferry::test::read_file(e)};
  }
  // The watchdog's status.json on the box (under the remote $HOME's state dir).
  std::optional<json> watchdog_status() const {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(sshd.home(), ec), end; !ec && it != end; it.increment(ec))
      if (it->path().filename() == "status.json" && it->path().parent_path().filename() == "autostop") {
        std::ifstream in(it->path());
        json j = json::parse(in, nullptr, false);
        if (!j.is_discarded()) return j;
      }
    return std::nullopt;
  }
};

}  // namespace

BOOST_GLOBAL_FIXTURE(Env);

BOOST_AUTO_TEST_CASE(cli_arms_and_it_fires_after_the_link_is_gone) {
  Box b;
  auto armed = b.ferry("autostop 1s --action command --command 'touch " + b.mark.string() + "'");
  BOOST_REQUIRE_MESSAGE(armed.status == 0, armed.err);
  BOOST_TEST(armed.out.find("autostop armed: command after 1 s idle") != std::string::npos, armed.out);
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(b.mark); }, 30s));
  auto st = b.ferry("autostop --status --json");
  BOOST_REQUIRE_MESSAGE(st.status == 0, st.err);
  json j = json::parse(st.out);
  BOOST_TEST(!j["armed"].get<bool>());
  BOOST_TEST((j["lastEvent"]["event"] == "actionDone" || j["lastEvent"]["event"] == "fired"), j.dump());
}

BOOST_AUTO_TEST_CASE(never_fires_while_ferry_serve_is_connected) {
  Box b;
  {
    ferry::test::ServeClient ide(b.sshd.dir());
    auto c = ide.call("host/connect", json::object());
    BOOST_REQUIRE_MESSAGE(c.contains("result"), c.dump());
    auto armed = b.ferry("autostop 1s --action command --command 'touch " + b.mark.string() + "'");
    BOOST_REQUIRE_MESSAGE(armed.status == 0, armed.err);
    // Eight checks 0.2 s apart, all seeing the IDE's link: longer than the idle time.
    BOOST_REQUIRE(ferry::test::eventually([&] {
      auto s = b.watchdog_status();
      return s && s->value("busy", "") == "a helper is connected" && s->value("checks", 0) >= 8;
    }, 30s));
    BOOST_TEST(!fs::exists(b.mark));
  }
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(b.mark); }, 30s));
}

BOOST_AUTO_TEST_CASE(ferry_json_block_is_armed_by_serve_and_cancel_disarms) {
  Box b(json{{"enabled", true}, {"idleMinutes", 45}, {"action", "notify"}, {"preStop", "true"}});
  {
    ferry::test::ServeClient ide(b.sshd.dir());
    auto c = ide.call("host/connect", json::object());
    BOOST_REQUIRE_MESSAGE(c.contains("result"), c.dump());
  }
  auto st = b.ferry("autostop --json");
  BOOST_REQUIRE_MESSAGE(st.status == 0, st.err);
  json j = json::parse(st.out);
  BOOST_TEST(j["armed"].get<bool>(), j.dump());
  BOOST_TEST(j["settings"]["idleSeconds"] == 2700.0);
  BOOST_TEST(j["settings"]["action"] == "notify");
  BOOST_TEST(j["settings"]["preStop"] == "true");
  auto text = b.ferry("autostop");
  BOOST_TEST(text.out.find("autostop armed: notify after 45 min idle") != std::string::npos, text.out);
  auto cancel = b.ferry("autostop --cancel");
  BOOST_REQUIRE_MESSAGE(cancel.status == 0, cancel.err);
  BOOST_TEST(cancel.out.find("autostop: not armed") != std::string::npos, cancel.out);
  auto bad = b.ferry("autostop soon");
  BOOST_TEST(bad.status == 2);
  BOOST_TEST(bad.err.find("90m") != std::string::npos, bad.err);
}

BOOST_AUTO_TEST_CASE(webhook_url_from_the_environment_reaches_the_box_and_stays_secret) {
  Box b;
  const fs::path port_file = b.sshd.dir() / "hook.port", out = b.sshd.dir() / "hook.json";
  const std::string start = "/usr/bin/python3 '" FERRY_RECEIVER "' --port-file '" + port_file.string() + "' --out '" +
                            out.string() + "' >/dev/null 2>&1 &";
  BOOST_REQUIRE(std::system(start.c_str()) == 0);
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(port_file); }, 20s));
  const std::string port = ferry::test::read_file(port_file);
  const std::string secret = "XOXB-SSH-SECRET-77";
  const std::string url = "http://127.0.0.1:" + port + "/services/" + secret;
  auto armed = b.ferry("autostop 1s --action notify --gpu-util-below 100");
  BOOST_REQUIRE_MESSAGE(armed.status == 0, armed.err);
  BOOST_TEST(armed.out.find("webhook") == std::string::npos, armed.out);  // no URL in this shell: none armed
  ::setenv("FERRY_WEBHOOK_URL", url.c_str(), 1);
  armed = b.ferry("autostop 1s --action command --command 'touch " + b.mark.string() + "'");
  ::unsetenv("FERRY_WEBHOOK_URL");
  BOOST_REQUIRE_MESSAGE(armed.status == 0, armed.err);
  BOOST_TEST(armed.out.find("webhook: http://127.0.0.1:" + port + "/…") != std::string::npos, armed.out);
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(out); }, 30s));
  json got = json::parse(ferry::test::read_file(out));
  BOOST_TEST(got["path"] == "/services/" + secret);
  json body = json::parse(got["body"].get<std::string>());
  BOOST_TEST(body["event"] == "autostop.fired");
  BOOST_TEST(body["action"] == "command");
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(b.mark); }, 30s));
  auto st = b.ferry("autostop --status --json");
  BOOST_TEST(st.out.find(secret) == std::string::npos);
  BOOST_TEST(armed.out.find(secret) == std::string::npos);
  BOOST_TEST(armed.err.find(secret) == std::string::npos);
  // The box's state dir (under the remote home) and everything the test and ferry wrote here.
  std::error_code ec;
  for (fs::recursive_directory_iterator it(b.sshd.dir(), ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path() == out) continue;
    std::ifstream in(it->path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    BOOST_TEST(text.str().find(secret) == std::string::npos, it->path().string());
  }
}

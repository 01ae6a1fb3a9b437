// `ferry serve` keeps one link per project: a session that syncs, saves, runs, debugs, trains
// and opens a tunnel against a real sshd makes exactly one SSH login (counted in sshd's own log),
// a second project in the same server gets its own, and a terminal's `ferry sync` rides the
// editor's link through the project socket (no login of its own).
#define BOOST_TEST_MODULE serve_one_link
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/file_uri.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/ferry_process.hpp"
#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using ferry::test::SshdFixture;
using json = nlohmann::json;
using ferry::test::read_file;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct Env {
  Env() {
    ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
    ::unsetenv("SSH_AUTH_SOCK");  // only the fixture's keys
  }
};

fs::path make_project(const SshdFixture& f, const std::string& name, const std::string& remote) {
  const fs::path dir = f.dir() / name;
  ferry::test::write_file(dir / "ferry.json", json{{"name", name},
                                                   {"host", f.alias()},
                                                   {"sshConfig", f.ssh_config().string()},
                                                   {"interpreter", "/usr/bin/python3"},
                                                   // This machine's trainer: the connect builds none on the box.
                                                   {"trainer", FERRY_TRAIN_BIN},
                                                   {"mappings", {{{"local", "."}, {"remote", remote}}}}}
                                                  .dump());
  ferry::test::write_file(dir / "main.py", "print('hello from the box')\n");
  ferry::test::write_file(dir / "loop.py", "import time\nwhile True:\n    time.sleep(0.05)\n");
  json config = {{"model", {{"kind", "mlp"}, {"input_dim", 8}, {"hidden", {16}}, {"output_dim", 2}}},
                 {"data", {{"source", "synthetic"}, {"task", "classification"}, {"samples", 128}, {"workers", 0}}},
                 {"optimizer", {{"kind", "adamw"}, {"lr", 0.01}}},
                 {"batch_size", 16},
                 {"max_steps", 5},
                 {"log_every_steps", 5},
                 {"threads", 1},
                 {"device", "cpu"},
                 {"output_dir", "out"}};
  ferry::test::write_file(dir / "tiny.json", config.dump());
  return dir;
}

ferry::test::SshdOptions logging_logins() {
  ferry::test::SshdOptions o;
  o.log_level = "INFO";  // "Accepted publickey for ..." per login
  return o;
}

auto method_is(const std::string& method, const std::string& key = "", const json& value = nullptr) {
  return [=](const json& n) {
    return n["method"] == method && (key.empty() || (n["params"].contains(key) && n["params"][key] == value));
  };
}

}  // namespace

BOOST_GLOBAL_FIXTURE(Env);

BOOST_AUTO_TEST_CASE(sync_save_run_debug_train_and_tunnel_share_one_ssh_login) {
  SshdFixture f(logging_logins());
  f.trust_host_key();
  const fs::path project = make_project(f, "one", "~/proj");
  ferry::test::ServeClient c(project);

  auto pushed = c.call("sync/push", json::object());
  BOOST_REQUIRE_MESSAGE(pushed.contains("result"), pushed.dump());
  BOOST_TEST(read_file(f.home() / "proj" / "main.py") == "print('hello from the box')\n");

  // Sync on save, the LSP way.
  ferry::test::write_file(project / "main.py", "print('saved, then run')\n");
  c.notify("textDocument/didSave", {{"textDocument", {{"uri", ferry::protocol::path_to_file_uri((project / "main.py").string())}}}});
  BOOST_REQUIRE(ferry::test::eventually([&] { return read_file(f.home() / "proj" / "main.py") == "print('saved, then run')\n"; }, 20s));

  auto run = c.call("run/start", {{"argv", {"main.py"}}});
  BOOST_REQUIRE_MESSAGE(run.contains("result"), run.dump());
  const std::string run_id = run["result"]["id"];
  auto exited = c.wait_notification(method_is("run/exited", "id", run_id), 30s);
  BOOST_REQUIRE(exited);
  BOOST_TEST((*exited)["params"]["exitCode"] == 0, exited->dump());

  auto debug = c.call("debug/prepare", {{"command", {"loop.py"}}, {"localPort", 0}});
  BOOST_REQUIRE_MESSAGE(debug.contains("result"), debug.dump());
  const std::string debug_run = debug["result"]["runId"];
  BOOST_TEST(debug["result"]["localPort"].get<int>() > 0);
  BOOST_TEST(c.call("run/signal", {{"id", debug_run}, {"signal", "KILL"}}).contains("result"));

  auto train = c.call("train/start", {{"config", "tiny.json"}, {"trainer", FERRY_TRAIN_BIN}});
  BOOST_REQUIRE_MESSAGE(train.contains("result"), train.dump());
  auto trained = c.wait_notification(method_is("train/exited"), 120s);
  BOOST_REQUIRE(trained);
  BOOST_TEST((*trained)["params"]["status"] == 0, trained->dump());

  auto tunnel = c.call("tunnel/open", {{"localPort", 0}, {"remotePort", 9}});
  BOOST_REQUIRE_MESSAGE(tunnel.contains("result"), tunnel.dump());
  auto list = c.call("tunnel/list", json::object());
  BOOST_TEST(list["result"]["tunnels"].size() >= 2u, list.dump());  // debug's and this one

  BOOST_TEST(f.accepted_logins() == 1, f.log());
  // host/stateChanged reached the editor once per change, not once per service.
  int connected = 0;
  for (const auto& n : c.notifications)
    connected += n["method"] == "host/stateChanged" && n["params"]["state"] == "connected";
  BOOST_TEST(connected == 1);
}

BOOST_AUTO_TEST_CASE(a_second_project_gets_its_own_link_and_host_connect_reuses_each) {
  SshdFixture f(logging_logins());
  f.trust_host_key();
  const fs::path a = make_project(f, "a", "~/a");
  const fs::path b = make_project(f, "b", "~/b");
  ferry::test::write_file(b / "only_in_b.py", "x = 1\n");
  ferry::test::ServeClient c(a);
  BOOST_TEST(c.call("host/connect", json::object()).contains("result"));
  BOOST_TEST(c.call("host/connect", json::object()).contains("result"));
  BOOST_TEST(c.call("sync/push", {{"path", b.string()}}).contains("result"));
  BOOST_TEST(c.call("sync/push", {{"path", a.string()}}).contains("result"));
  BOOST_TEST(fs::exists(f.home() / "a" / "main.py"));
  BOOST_TEST(fs::exists(f.home() / "b" / "main.py"));

  // A window of several projects tells them apart: each link's state changes name its project,
  // and sync/status and gpu/status answer for the project asked about.
  const std::string root_b = c.call("project/load", {{"path", b.string()}})["result"]["root"];
  BOOST_TEST(c.wait_notification(
                   [&](const json& n) { return n["method"] == "host/stateChanged" && n["params"].value("root", "") == root_b; }, 5s)
                 .has_value());
  const json status_a = c.call("sync/status", {{"path", a.string()}})["result"];
  const json status_b = c.call("sync/status", {{"path", b.string()}})["result"];
  BOOST_TEST(status_b["lastSync"]["filesSent"].get<int>() == status_a["lastSync"]["filesSent"].get<int>() + 1,
             status_a.dump() + " " + status_b.dump());
  BOOST_TEST(status_b["connected"] == true);
  BOOST_TEST(c.call("gpu/status", {{"path", b.string()}}).contains("result"));
  BOOST_TEST(f.accepted_logins() == 2, f.log());
}

// The editor's server is live and linked: a terminal's `ferry sync` and `ferry pull` are answered
// by it, so sshd sees no login of the terminal's; the summary line and exit status are their own. With
// FERRY_NO_DAEMON=1 the terminal links by itself, as before.
BOOST_AUTO_TEST_CASE(a_terminal_sync_rides_the_editors_link) {
  SshdFixture f(logging_logins());
  f.trust_host_key();
  const fs::path a = make_project(f, "a", "~/a");
  ferry::test::ServeClient editor(a);
  BOOST_REQUIRE(editor.call("host/connect", json::object()).contains("result"));
  BOOST_REQUIRE(f.accepted_logins() == 1);
  ferry::test::write_file(a / "from_terminal.py", "x = 1\n");
  {
    ferry::test::FerryProcess sync(FERRY_BIN, a, {"sync"});
    BOOST_TEST(sync.wait() == 0, sync.err());
    BOOST_TEST(sync.out().find(" files sent, 0 deleted, 0 conflicts") != std::string::npos, sync.out());
    BOOST_TEST(sync.out().find("(ssh ") != std::string::npos, sync.out());  // where: the link's description
  }
  BOOST_TEST(fs::exists(f.home() / "a" / "from_terminal.py"));
  {
    ferry::test::FerryProcess again(FERRY_BIN, a, {"sync", "--json"});
    BOOST_TEST(again.wait() == 0, again.err());
    const json summary = json::parse(again.out(), nullptr, false);
    BOOST_TEST(summary.value("filesSent", -1) == 0, again.out());
  }
  // The editor's own view: the terminal's pushes went through its engine.
  const json status = editor.call("sync/status", json::object())["result"];
  BOOST_TEST(status["lastSync"].value("filesSent", -1) == 0, status.dump());
  // An output made on the box comes back through the same link.
  ferry::test::write_file(f.home() / "a" / "out" / "result.txt", "loss 0.1\n");
  {
    ferry::test::FerryProcess pull(FERRY_BIN, a, {"pull", "out"});
    BOOST_TEST(pull.wait() == 0, pull.err());
    BOOST_TEST(pull.out().find("1 files sent") != std::string::npos, pull.out());
  }
  BOOST_TEST(ferry::test::read_file(a / "out" / "result.txt") == "loss 0.1\n");
  BOOST_TEST(f.accepted_logins() == 1, f.log());  // two terminal syncs and a pull, no login of their own

  ::setenv("FERRY_NO_DAEMON", "1", 1);
  {
    ferry::test::FerryProcess alone(FERRY_BIN, a, {"sync"});
    BOOST_TEST(alone.wait() == 0, alone.err());
  }
  ::unsetenv("FERRY_NO_DAEMON");
  BOOST_TEST(f.accepted_logins() == 2, f.log());
}

// Autostop through the real ferry-agent binary on pipes, with idle times of a second and a
// harmless action (touch a file): it fires only once nothing is live, never while a helper is
// connected or a run is live, and its armed state outlives the agent and the watchdog itself.
// The waits watch the watchdog's own status.json (its check count), never the clock.
// The webhook notice goes from the watchdog through the box's curl to a real receiver on
// 127.0.0.1 (tests/support/webhook_receiver.py); its secret URL is in no file, log or argv.
#define BOOST_TEST_MODULE autostop
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "protocol/agent_wire.hpp"
#include "remote-runtime/agent/autostop/autostop_state.hpp"
#include "remote-runtime/agent/autostop/watchdog.hpp"
#include "remote-runtime/agent/run/run_store.hpp"
#include "tests/support/raw_agent.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;
namespace as = ferry::agent::autostop;

namespace {

struct Box {
  ferry::test::TempDir tmp{"ferry-autostop"};
  fs::path root = tmp / "root";
  fs::path state = tmp / "state";
  fs::path mark = tmp / "fired";
  as::Paths paths{state};
  Box() { fs::create_directories(root); }
  ~Box() {
    // Nothing armed may outlive the test: cancel, then stop any watchdog and run left behind.
    as::remove_settings(paths);
    if (auto st = ferry::agent::run::read_json_file(paths.status())) ::kill(st->value("pid", 0), SIGKILL);
    std::error_code e;
    for (fs::directory_iterator it(state / "runs", e), end; !e && it != end; it.increment(e))
      if (auto m = ferry::agent::run::read_json_file(it->path() / "meta.json")) ::kill(-m->value("pgid", 0LL), SIGKILL);
  }
  json settings(double idle = 1) const {
    return {{"idleSeconds", idle}, {"action", "command"}, {"command", "touch '" + mark.string() + "'"}};
  }
  std::optional<json> status() const { return ferry::agent::run::read_json_file(paths.status()); }
  // The watchdog has looked `n` more times and each time saw `busy` (checks count up from `after`).
  bool saw_busy_for(const std::string& busy, long after, long n) const {
    auto s = status();
    return s && s->value("busy", "") == busy && s->value("checks", 0L) >= after + n;
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
  void close() {
    raw.stream->close_write();
    BOOST_REQUIRE(raw.child.wait_for(10s).has_value());
  }
};

// Enough checks that the watchdog has been busy for longer than the idle time (0.2 s apart).
constexpr long kChecksPastIdle = 8;

// The receiver in the background; its port once it listens. It records one request in NAME.json.
int start_receiver(const Box& b, const std::string& name) {
  const fs::path port_file = b.tmp / (name + ".port");
  const std::string cmd = "/usr/bin/python3 '" FERRY_RECEIVER "' --port-file '" + port_file.string() + "' --out '" +
                          (b.tmp / (name + ".json")).string() + "' >/dev/null 2>&1 &";
  BOOST_REQUIRE(std::system(cmd.c_str()) == 0);
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(port_file); }, 20s));
  return std::stoi(ferry::test::read_file(port_file));
}

const std::string kSecret = "T0SECRETxyz";

std::string raw_file(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The process exists and is not a zombie (an exited watchdog waits for init to reap it).
bool running(long pid) {
  const std::string stat = raw_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// Files under `dir` whose bytes hold `needle`.
std::vector<std::string> files_holding(const fs::path& dir, const std::string& needle) {
  std::vector<std::string> hits;
  std::error_code e;
  for (fs::recursive_directory_iterator it(dir, e), end; !e && it != end; it.increment(e))
    if (it->is_regular_file(e) && raw_file(it->path()).find(needle) != std::string::npos) hits.push_back(it->path().string());
  return hits;
}

// Events named `name` in events.jsonl, oldest first.
std::vector<json> events_named(const Box& b, const std::string& name) {
  std::vector<json> out;
  std::ifstream in(b.paths.events());
  for (std::string line; std::getline(in, line);)
    if (auto j = json::parse(line, nullptr, false); !j.is_discarded() && j.value("event", "") == name) out.push_back(j);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(settings_validation_and_the_stop_command) {
  BOOST_TEST(!as::settings_from_json(json{{"action", "stop"}}).has_value());  // idleSeconds required
  BOOST_TEST(as::settings_from_json(json{{"idleSeconds", 0}}).error().starts_with("/idleSeconds"));
  BOOST_TEST(as::settings_from_json(json{{"idleSeconds", 5}, {"action", "reboot"}}).error().starts_with("/action"));
  BOOST_TEST(as::settings_from_json(json{{"idleSeconds", 5}, {"action", "command"}}).error().starts_with("/command"));
  auto stop = as::settings_from_json(json{{"idleSeconds", 60}});
  BOOST_REQUIRE(stop.has_value());
  BOOST_TEST(*as::action_command(*stop) == (::geteuid() == 0 ? "shutdown -h now" : "sudo -n shutdown -h now"));
  stop->action = "notify";
  BOOST_TEST(!as::action_command(*stop).has_value());
  BOOST_TEST(as::poll_interval(1).count() == 200);
  BOOST_TEST(as::poll_interval(1800).count() == 10000);
}

BOOST_AUTO_TEST_CASE(busy_reasons_from_the_state_dir_and_the_gpus) {
  Box b;
  as::Settings s;
  s.gpu_util_below = 10;
  BOOST_TEST(!as::busy_reason(b.paths, s, {}).has_value());
  BOOST_TEST(*as::busy_reason(b.paths, s, [] { return std::vector<double>{3, 42}; }) == "GPU 1 at 42 %");
  BOOST_TEST(!as::busy_reason(b.paths, s, [] { return std::vector<double>{9.5}; }).has_value());
  {
    as::ConnectionMark me(b.paths);
    // Our own mark: this test binary is not a ferry-agent, so it does not count (pids are reused).
    BOOST_TEST(!as::busy_reason(b.paths, s, {}).has_value());
    BOOST_TEST(!fs::exists(b.paths.agents() / std::to_string(::getpid())));  // the stale mark was removed
  }
}

BOOST_AUTO_TEST_CASE(fires_only_after_the_helper_disconnects) {
  Box b;
  Agent a(b);
  auto armed = a.call("autostop/set", b.settings());
  BOOST_REQUIRE_MESSAGE(armed.value("armed", false), armed.dump());
  BOOST_TEST(armed["settings"]["idleSeconds"] == 1.0);
  BOOST_REQUIRE(ferry::test::eventually([&] { return b.saw_busy_for("a helper is connected", 0, kChecksPastIdle); }, 20s));
  BOOST_TEST(!fs::exists(b.mark));  // connected for well over the idle time: nothing fired
  a.close();
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(b.mark); }, 20s));
  BOOST_REQUIRE(ferry::test::eventually([&] { return as::last_event(b.paths).value_or(json{})["event"] == "actionDone"; }, 10s));
  BOOST_TEST(as::last_event(b.paths)->value("exitCode", -1) == 0);
  BOOST_TEST(!as::read_settings(b.paths).has_value());  // fired once, then disarmed
  BOOST_TEST(ferry::test::eventually([&] { return !as::watchdog_running(b.paths); }, 10s));
}

BOOST_AUTO_TEST_CASE(never_fires_while_a_run_is_live) {
  Box b;
  const fs::path go = b.tmp / "go";
  {
    Agent a(b);
    auto run = a.call("run/start", {{"argv", {"/bin/sh", "-c", "while [ ! -e '" + go.string() + "' ]; do sleep 0.05; done"}}});
    BOOST_REQUIRE_MESSAGE(run.contains("id"), run.dump());
    BOOST_REQUIRE(a.call("autostop/set", b.settings()).value("armed", false));
    a.close();
  }
  BOOST_REQUIRE(ferry::test::eventually([&] { return b.saw_busy_for("1 live run", 0, kChecksPastIdle); }, 20s));
  BOOST_TEST(!fs::exists(b.mark));
  ferry::test::write_file(go, "");
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(b.mark); }, 20s));
}

BOOST_AUTO_TEST_CASE(armed_state_survives_the_agent_and_the_watchdog_restarting) {
  Box b;
  const fs::path go = b.tmp / "go";
  long old_pid = 0;
  {
    Agent a(b);
    a.call("run/start", {{"argv", {"/bin/sh", "-c", "while [ ! -e '" + go.string() + "' ]; do sleep 0.05; done"}}});
    BOOST_REQUIRE(a.call("autostop/set", b.settings()).value("armed", false));
    BOOST_REQUIRE(ferry::test::eventually([&] { return b.status().has_value(); }, 10s));
    old_pid = b.status()->value("pid", 0L);
    a.close();
  }
  // The box "reboots" the watchdog away; the armed settings stay on disk.
  BOOST_REQUIRE(old_pid > 0);
  ::kill(static_cast<pid_t>(old_pid), SIGKILL);
  BOOST_REQUIRE(ferry::test::eventually([&] { return !as::watchdog_running(b.paths); }, 10s));
  {
    Agent a(b);  // a new agent finds the armed state and starts a new watchdog
    auto st = a.call("autostop/status", json::object());
    BOOST_TEST(st.value("armed", false));
    BOOST_REQUIRE(ferry::test::eventually([&] { return b.status() && b.status()->value("pid", 0L) != old_pid; }, 10s));
    a.close();
  }
  ferry::test::write_file(go, "");
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(b.mark); }, 20s));
}

BOOST_AUTO_TEST_CASE(cancel_disarms) {
  Box b;
  {
    Agent a(b);
    BOOST_REQUIRE(a.call("autostop/set", b.settings(600)).value("armed", false));
    auto c = a.call("autostop/cancel", json::object());
    BOOST_TEST(c.value("wasArmed", false));
    BOOST_TEST(!c.value("armed", true));
    BOOST_TEST(a.call("autostop/set", json{{"idleSeconds", -1}}).contains("error"));
    a.close();
  }
  BOOST_TEST(ferry::test::eventually([&] { return !as::watchdog_running(b.paths); }, 10s));
  BOOST_TEST(as::last_event(b.paths)->value("event", "") == "cancelled");
  BOOST_TEST(!fs::exists(b.mark));
}

BOOST_AUTO_TEST_CASE(webhook_notice_leaves_the_box_through_curl_and_the_url_stays_secret) {
  Box b;
  const int port = start_receiver(b, "hook");
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/hooks/" + kSecret + "/B0?token=" + kSecret;
  const std::string shown = "http://127.0.0.1:" + std::to_string(port) + "/…";
  Agent a(b);
  // A first arm without a webhook, then a re-arm with one: the new watchdog takes over and holds it.
  BOOST_REQUIRE(a.call("autostop/set", b.settings(600)).value("armed", false));
  BOOST_REQUIRE(ferry::test::eventually([&] { return b.status().has_value(); }, 10s));
  const long first_pid = b.status()->value("pid", 0L);
  json with_hook = b.settings();
  with_hook["webhook"] = {{"url", url}};
  auto armed = a.call("autostop/set", with_hook);
  BOOST_REQUIRE_MESSAGE(armed.value("armed", false), armed.dump());
  BOOST_TEST(armed["settings"]["webhookTo"] == shown);
  BOOST_REQUIRE(ferry::test::eventually([&] { return b.status() && b.status()->value("pid", 0L) != first_pid; }, 10s));
  const long pid = b.status()->value("pid", 0L);
  BOOST_TEST(ferry::test::eventually([&] { return !running(first_pid); }, 10s));  // handed over and gone
  const std::string proc = "/proc/" + std::to_string(pid);
  BOOST_TEST(raw_file(proc + "/cmdline").find("--autostop-watch") != std::string::npos);
  BOOST_TEST(raw_file(proc + "/cmdline").find(kSecret) == std::string::npos);
  BOOST_TEST(raw_file(proc + "/environ").find(kSecret) == std::string::npos);
  BOOST_TEST(files_holding(b.state, kSecret).empty());
  a.close();

  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(b.tmp / "hook.json"); }, 30s));
  json got = json::parse(ferry::test::read_file(b.tmp / "hook.json"));
  BOOST_TEST(got["path"] == "/hooks/" + kSecret + "/B0?token=" + kSecret);
  BOOST_TEST(got["headers"]["Content-Type"] == "application/json");
  json body = json::parse(got["body"].get<std::string>());
  BOOST_TEST(body["event"] == "autostop.fired");
  BOOST_TEST(body["action"] == "command");
  BOOST_TEST(body["idleSeconds"] == 1.0);
  BOOST_TEST(body["host"].get<std::string>().size() > 0);
  BOOST_REQUIRE(ferry::test::eventually([&] { return as::last_event(b.paths).value_or(json{})["event"] == "actionDone"; }, 20s));
  auto sent = events_named(b, "webhook");
  BOOST_REQUIRE(sent.size() == 1u);
  BOOST_TEST(sent[0].value("sent", false), sent[0].dump());
  BOOST_TEST(sent[0]["status"] == 204);
  BOOST_TEST(sent[0]["to"] == shown);
  BOOST_TEST(fs::exists(b.mark));
  const auto leaks = files_holding(b.state, kSecret);  // settings, status, events, watchdog.log
  BOOST_TEST(leaks.empty(), (leaks.empty() ? "" : leaks.front()));
}

BOOST_AUTO_TEST_CASE(webhook_failures_are_recorded_without_the_url) {
  Box b;
  const fs::path go = b.tmp / "go";
  // Nothing listens on the discard port of 127.0.0.1: curl fails, the reason says so, redacted.
  const std::string url = "http://127.0.0.1:9/hooks/" + kSecret;
  {
    Agent a(b);
    json set = b.settings();
    set["webhook"] = {{"url", url}};
    BOOST_TEST(a.call("autostop/set", json{{"idleSeconds", 1}, {"webhook", {{"url", "ftp://x/" + kSecret}}}})["error"]
                   .get<std::string>()
                   .find(kSecret) == std::string::npos);
    BOOST_REQUIRE(a.call("autostop/set", set).value("armed", false));
    a.close();
  }
  BOOST_REQUIRE(ferry::test::eventually([&] { return as::last_event(b.paths).value_or(json{})["event"] == "actionDone"; }, 30s));
  auto failed = events_named(b, "webhook");
  BOOST_REQUIRE(failed.size() == 1u);
  BOOST_TEST(!failed[0].value("sent", true));
  BOOST_TEST(failed[0]["reason"].get<std::string>().find("curl exited with 7") != std::string::npos, failed[0].dump());
  BOOST_TEST(files_holding(b.state, kSecret).empty());

  // A watchdog restarted without the URL (agent restart after a box reboot) says it cannot send it.
  long old_pid = 0;
  {
    Agent a(b);
    a.call("run/start", {{"argv", {"/bin/sh", "-c", "while [ ! -e '" + go.string() + "' ]; do sleep 0.05; done"}}});
    json set = b.settings();
    set["webhook"] = {{"url", url}};
    BOOST_REQUIRE(a.call("autostop/set", set).value("armed", false));
    BOOST_REQUIRE(ferry::test::eventually([&] { return b.status().has_value() && b.status()->value("pid", 0L) != 0; }, 10s));
    a.close();
  }
  BOOST_REQUIRE(ferry::test::eventually([&] { return b.saw_busy_for("1 live run", 0, 2); }, 20s));
  old_pid = b.status()->value("pid", 0L);
  ::kill(static_cast<pid_t>(old_pid), SIGKILL);
  BOOST_REQUIRE(ferry::test::eventually([&] { return !as::watchdog_running(b.paths); }, 10s));
  {
    Agent a(b);
    BOOST_REQUIRE(ferry::test::eventually([&] { return b.status() && b.status()->value("pid", 0L) != old_pid; }, 10s));
    a.close();
  }
  ferry::test::write_file(go, "");
  BOOST_REQUIRE(ferry::test::eventually([&] { return events_named(b, "webhook").size() == 2u; }, 30s));
  auto restarted = events_named(b, "webhook")[1];
  BOOST_TEST(!restarted.value("sent", true));
  BOOST_TEST(restarted["to"] == "http://127.0.0.1:9/…");
  BOOST_TEST(restarted["reason"].get<std::string>().find("does not hold the URL") != std::string::npos);
  BOOST_TEST(files_holding(b.state, kSecret).empty());
}

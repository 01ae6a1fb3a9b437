// Autostop through the real ferry-agent binary on pipes, with idle times of a second and a
// harmless action (touch a file): it fires only once nothing is live, never while a helper is
// connected or a run is live, and its armed state outlives the agent and the watchdog itself.
// The waits watch the watchdog's own status.json (its check count), never the clock.
#define BOOST_TEST_MODULE autostop
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <unistd.h>

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

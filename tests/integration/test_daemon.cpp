// The daemon a terminal command leaves behind (helper/server/daemon.hpp, docs/daemon.md) against a
// real sshd, whose own log counts the logins: ten commands after the first ride one link; `ferry
// daemon status|stop`; idle exit; no daemon where ferry.json says 0; an editor's ferry serve takes
// the project over (no second link); a daemon killed mid-sync leaves no torn file and the next
// command converges (and leaves a new daemon).
#define BOOST_TEST_MODULE daemon
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "helper/server/socket_client.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/ferry_process.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/serve_client.hpp"
#include "tests/support/tcp_peers.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using ferry::test::SshdFixture;
using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct Env {
  Env() {
    ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
    ::unsetenv("SSH_AUTH_SOCK");  // only the fixture's keys
    ::unsetenv("FERRY_NO_DAEMON");
    ::unsetenv("FERRY_DAEMON_IDLE");
  }
};
BOOST_GLOBAL_FIXTURE(Env);

ferry::test::SshdOptions logging_logins() {
  ferry::test::SshdOptions o;
  o.log_level = "INFO";  // "Accepted publickey for ..." per login
  return o;
}

fs::path make_project(const SshdFixture& f, const std::string& name, json extra = json::object()) {
  const fs::path dir = f.dir() / name;
  json config{{"name", name},
              {"host", f.alias()},
              {"sshConfig", f.ssh_config().string()},
              {"mappings", {{{"local", "."}, {"remote", "~/" + name}}}}};
  config.update(extra);
  ferry::test::write_file(dir / "ferry.json", config.dump());
  ferry::test::write_file(dir / "main.py", "print('hello from the box')\n");
  return fs::canonical(dir);
}

// What the live process of `root` says of itself (ferry/hello); nullopt when none listens.
std::optional<json> hello(const fs::path& root) {
  auto client = ferry::server::SocketClient::connect(root);
  if (!client) return std::nullopt;
  auto h = client->call("ferry/hello", json{{"path", root.string()}}, {}, {}, 5s);
  if (!h) return std::nullopt;
  return *h;
}

// The daemon of `root` once it is linked (its pid), within `limit`.
std::optional<long long> linked_daemon(const fs::path& root, std::chrono::milliseconds limit = 30s) {
  std::optional<long long> pid;
  ferry::test::eventually(
      [&] {
        auto h = hello(root);
        if (h && h->value("daemon", false) && h->value("linked", false)) pid = h->value("pid", 0LL);
        return pid.has_value();
      },
      limit);
  return pid;
}

// Gone, or a zombie nobody reaped yet (a container's pid 1 may never reap orphans).
bool process_gone(long long pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0) return true;
  const std::string stat = ferry::test::read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || stat.substr(paren + 2, 1) == "Z";
}

int run_ferry(const fs::path& root, const std::vector<std::string>& args, std::string* out = nullptr) {
  ferry::test::FerryProcess p(FERRY_BIN, root, args);
  const int rc = p.wait();
  if (out) *out = p.out() + p.err();
  return rc;
}

// A project on the fixture's box whose daemon a first `ferry sync` left, linked.
struct LinkedDaemon {
  SshdFixture f{logging_logins()};
  fs::path a;
  long long pid = 0;
  LinkedDaemon() {
    f.trust_host_key();
    a = make_project(f, "a");
    BOOST_REQUIRE(run_ferry(a, {"sync"}) == 0);
    auto linked = linked_daemon(a);
    BOOST_REQUIRE_MESSAGE(linked, "no daemon linked after the first sync");
    pid = *linked;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(ten_commands_after_the_first_ride_one_login_then_status_and_stop) {
  SshdFixture f(logging_logins());
  f.trust_host_key();
  const fs::path a = make_project(f, "a");
  std::string out;
  BOOST_REQUIRE(run_ferry(a, {"sync"}, &out) == 0);
  BOOST_TEST(f.accepted_logins() == 1, f.log());
  const auto pid = linked_daemon(a);
  BOOST_REQUIRE_MESSAGE(pid, "no daemon linked after the first sync; its log: " + ferry::test::read_file(a / ".ferry/logs/daemon.log"));
  BOOST_TEST(f.accepted_logins() == 2, f.log());  // the daemon's own
  for (int i = 0; i < 10; ++i) {
    ferry::test::write_file(a / ("step" + std::to_string(i) + ".py"), "x = " + std::to_string(i) + "\n");
    BOOST_TEST(run_ferry(a, {"sync"}, &out) == 0, out);
    BOOST_TEST(out.find("1 files sent") != std::string::npos, out);
    BOOST_TEST(ferry::test::read_file(f.home() / "a" / ("step" + std::to_string(i) + ".py")) == "x = " + std::to_string(i) + "\n");
  }
  // A file watcher's save (`ferry sync FILE`, PyCharm's File Watcher) rides too.
  ferry::test::write_file(a / "saved.py", "z = 3\n");
  BOOST_TEST(run_ferry(a, {"sync", (a / "saved.py").string()}, &out) == 0, out);
  BOOST_TEST(ferry::test::read_file(f.home() / "a" / "saved.py") == "z = 3\n");
  ferry::test::write_file(f.home() / "a" / "out" / "loss.txt", "0.1\n");
  BOOST_TEST(run_ferry(a, {"pull", "out"}, &out) == 0, out);
  BOOST_TEST(ferry::test::read_file(a / "out" / "loss.txt") == "0.1\n");
  BOOST_TEST(f.accepted_logins() == 2, f.log());  // eleven syncs and a pull: no login of their own

  BOOST_TEST(run_ferry(a, {"daemon", "status"}, &out) == 0, out);
  BOOST_TEST(out.find("ferry daemon (pid " + std::to_string(*pid) + ") serves " + a.string() + ": linked, ssh ") != std::string::npos, out);
  BOOST_TEST(out.find("exits after 5 min 0 s without a command") != std::string::npos, out);
  BOOST_TEST(run_ferry(a, {"daemon", "stop"}, &out) == 0, out);
  BOOST_TEST(out.find("stopped ferry daemon (pid " + std::to_string(*pid) + ")") != std::string::npos, out);
  BOOST_TEST(ferry::test::eventually([&] { return process_gone(*pid); }, 10s));
  BOOST_TEST(!hello(a));
  BOOST_TEST(run_ferry(a, {"daemon", "status"}, &out) == 1, out);
  BOOST_TEST(out.find("no live ferry serves " + a.string()) != std::string::npos, out);
  BOOST_TEST(run_ferry(a, {"daemon", "stop"}, &out) == 0, out);
  BOOST_TEST(out.find("no daemon serves") != std::string::npos, out);
}

// `ferry runs`, `ferry logs`, `ferry kill` and `ferry gpu` only ask the agent: they ride the
// daemon too (its agent/call), with the same output.
BOOST_FIXTURE_TEST_CASE(runs_logs_kill_and_gpu_ride_the_daemon, LinkedDaemon) {
  std::string out;
  BOOST_REQUIRE(run_ferry(a, {"run", "--detach", "--", "sh", "-c", "echo to-out; echo to-err >&2; sleep 60"}, &out) == 0);
  std::smatch found;
  BOOST_REQUIRE_MESSAGE(std::regex_search(out, found, std::regex("[0-9]{8}-[0-9]{6}-[0-9a-f]+")), out);
  const std::string id = found.str();  // `out` is written again below
  const int logins = f.accepted_logins();  // the first sync's and the daemon's
  BOOST_TEST(run_ferry(a, {"runs"}, &out) == 0, out);
  BOOST_TEST(out.find(id + "  running") != std::string::npos, out);
  BOOST_TEST(ferry::test::eventually([&] {
    run_ferry(a, {"logs", id}, &out);
    return out.find("to-out") != std::string::npos && out.find("to-err") != std::string::npos;
  }, 10s), out);
  BOOST_TEST(run_ferry(a, {"runs", "--json"}, &out) == 0, out);
  BOOST_TEST(out.find("\"" + id + "\"") != std::string::npos, out);
  BOOST_TEST(run_ferry(a, {"kill", id}, &out) == 0, out);
  BOOST_TEST(out.find("sent SIGTERM to run " + id) != std::string::npos, out);
  BOOST_TEST(ferry::test::eventually([&] {
    run_ferry(a, {"runs"}, &out);
    return out.find(id + "  exited") != std::string::npos;
  }, 10s), out);
  BOOST_TEST(run_ferry(a, {"kill", id}, &out) == 2, out);  // exited: an unknown run's status, said the same way
  BOOST_TEST(out.find("has exited") != std::string::npos, out);
  // `ferry gpu` asks the agent the same way (no GPU on this box: it says so, with the host's load).
  BOOST_TEST(run_ferry(a, {"gpu", "--json"}, &out) == 0, out);
  const json gpu = json::parse(out.substr(0, out.rfind('}') + 1), nullptr, false);
  BOOST_TEST(gpu.value("available", true) == false, out);
  BOOST_TEST(gpu.contains("host"), out);
  BOOST_TEST(f.accepted_logins() == logins, f.log());  // none of their own
  // --no-daemon goes its own way: a login of its own, the same answer.
  BOOST_TEST(run_ferry(a, {"--no-daemon", "runs"}, &out) == 0, out);
  BOOST_TEST(out.find(id + "  exited") != std::string::npos, out);
  BOOST_TEST(f.accepted_logins() == logins + 1, f.log());
}

namespace {

// The entry of `ferry runs --json` whose argv holds `marker` (null when none).
json run_entry(const fs::path& root, const std::string& marker) {
  std::string out;
  run_ferry(root, {"runs", "--json"}, &out);
  const json all = json::parse(out.substr(0, out.rfind(']') + 1), nullptr, false);
  for (const auto& r : all.is_array() ? all : json::array())
    for (const auto& a : r.value("argv", json::array()))
      if (a.is_string() && a.get<std::string>().find(marker) != std::string::npos) return r;
  return json();
}

}  // namespace

// `ferry run`, `ferry attach` and `ferry logs --follow` ride the daemon: output on the right
// streams, the run's exit status, stdin, Ctrl-C to the run, two followers of one run at once, a
// killed terminal's run left to go on (or killed, after a Ctrl-C), and no login of their own.
BOOST_FIXTURE_TEST_CASE(run_attach_and_follow_ride_the_daemon, LinkedDaemon) {
  const int logins = f.accepted_logins();
  {
    ferry::test::FerryProcess run(FERRY_BIN, a, {"run", "--", "sh", "-c", "echo to-out; echo to-err >&2; exit 3"});
    BOOST_TEST(run.wait() == 3, run.err());
    BOOST_TEST(run.out() == "to-out\n");
    BOOST_TEST(run.err().find("to-err\n") != std::string::npos, run.err());
    BOOST_TEST(run.err().find("connecting") == std::string::npos, run.err());  // no link of its own
    // Its run/list may be answered after its run/start: the new run is not one left behind.
    BOOST_TEST(run.err().find("no ferry following it") == std::string::npos, run.err());
  }
  {
    ferry::test::FerryProcess run(FERRY_BIN, a, {"run", "--", "sh", "-c", "read x; echo got-$x; cat main.py"}, true);
    run.write_stdin("abc\n");
    run.close_stdin();
    BOOST_TEST(run.wait() == 0, run.err());
    BOOST_TEST(run.out() == "got-abc\nprint('hello from the box')\n");  // synced before it ran
  }
  {
    // Ctrl-C reaches the run.
    ferry::test::FerryProcess run(FERRY_BIN, a, {"run", "--", "sh", "-c", "trap 'echo trapped; exit 7' INT; echo ready; while :; do sleep 0.05; done"});
    BOOST_REQUIRE_MESSAGE(run.wait_out("ready\n"), run.err());
    run.signal(SIGINT);
    BOOST_TEST(run.wait() == 7, run.err());
    BOOST_TEST(run.out() == "ready\ntrapped\n");
  }
  {
    // A terminal killed after its Ctrl-C (an IDE's second Stop): the run gets SIGKILL.
    ferry::test::FerryProcess run(FERRY_BIN, a, {"run", "--", "sh", "-c", "trap '' INT; echo ready; sleep 60 # kill-me"});
    BOOST_REQUIRE_MESSAGE(run.wait_out("ready\n"), run.err());
    run.signal(SIGINT);
    BOOST_REQUIRE_MESSAGE(run.wait_out("ferry: ", 10s, true), run.err());  // the escalation's note: the signal was sent
    run.signal(SIGKILL);
    run.wait();
    json entry;
    BOOST_TEST(ferry::test::eventually([&] { return (entry = run_entry(a, "kill-me")).value("state", "") == "exited"; }, 15s),
               entry.dump());
    BOOST_TEST(entry.value("signal", 0) == 9, entry.dump());
  }
  // A terminal killed without a Ctrl-C: the run goes on, followed by nobody, and two terminals
  // follow it at once from the start.
  ferry::test::FerryProcess first(FERRY_BIN, a, {"run", "--", "sh", "-c", "echo one; while [ ! -e go ]; do sleep 0.05; done; echo two # left"});
  BOOST_REQUIRE_MESSAGE(first.wait_out("one\n"), first.err());
  first.signal(SIGKILL);
  first.wait();
  json left;
  BOOST_TEST(ferry::test::eventually([&] { return (left = run_entry(a, "# left")).value("followed", true) == false; }, 15s), left.dump());
  BOOST_REQUIRE(left.value("state", "") == "running");
  const std::string id = left.value("id", "");
  ferry::test::FerryProcess attach(FERRY_BIN, a, {"attach", id});
  ferry::test::FerryProcess follow(FERRY_BIN, a, {"logs", "--follow", id});
  BOOST_REQUIRE_MESSAGE(attach.wait_out("one\n"), attach.err());
  BOOST_REQUIRE_MESSAGE(follow.wait_out("one\n"), follow.err());
  ferry::test::write_file(f.home() / "a" / "go", "");
  BOOST_TEST(attach.wait() == 0, attach.err());
  BOOST_TEST(follow.wait() == 0, follow.err());
  BOOST_TEST(attach.out() == "one\ntwo\n");
  BOOST_TEST(follow.out() == "one\ntwo\n");
  BOOST_TEST(f.accepted_logins() == logins, f.log());  // none of their own
}

// A terminal that stops reading stalls only its own stream: the daemon lets the stream go past
// 8 MiB queued and takes it up again at the next offset, and every byte arrives once, in order.
BOOST_FIXTURE_TEST_CASE(a_terminal_that_stops_reading_gets_every_byte_once, LinkedDaemon) {
  // 30 MB of numbered lines; the reader sleeps first, so the daemon's queue for it fills.
  const std::string producer = "seq 1 3500000";
  const std::string expected = ferry::test::run_command(producer + " | md5sum");
  const std::string got = ferry::test::run_command("cd '" + a.string() + "' && '" + FERRY_BIN + "' run -- " + producer +
                                                   " | { sleep 3; md5sum; }");
  BOOST_TEST(got == expected);
  const std::string log = ferry::test::read_file(a / ".ferry/logs/daemon.log");
  BOOST_TEST(log.find("reads slower than its run writes; pausing") != std::string::npos, log);
}

// The daemon killed under a riding `ferry run`: the command says so and fails, the run goes on
// on the box (as with a killed CLI of its own), and the next command links by itself.
BOOST_FIXTURE_TEST_CASE(a_daemon_killed_under_a_riding_run_leaves_the_run_going, LinkedDaemon) {
  ferry::test::FerryProcess run(FERRY_BIN, a, {"run", "--", "sh", "-c", "echo started; while [ ! -e done ]; do sleep 0.05; done; echo finished # outlives"});
  BOOST_REQUIRE_MESSAGE(run.wait_out("started\n"), run.err());
  ::kill(static_cast<pid_t>(pid), SIGKILL);
  const int rc = run.wait();
  BOOST_TEST(rc == 255, "status " << rc << ": " << run.err());  // ferry's own failure, not the run's
  BOOST_TEST(run.err().find("the live ferry (pid " + std::to_string(pid) + ") went away") != std::string::npos, run.err());
  BOOST_TEST(run.err().find("goes on (`ferry attach ") != std::string::npos, run.err());
  // Its own link now (the dead daemon's socket is refused): the run is still running, and finishes.
  ::setenv("FERRY_NO_DAEMON", "1", 1);
  json entry;
  BOOST_TEST(ferry::test::eventually([&] { return (entry = run_entry(a, "# outlives")).value("state", "") == "running"; }, 15s),
             entry.dump());
  ferry::test::write_file(f.home() / "a" / "done", "");
  std::string out;
  BOOST_TEST(run_ferry(a, {"attach", entry.value("id", "")}, &out) == 0, out);
  BOOST_TEST(out.find("started\nfinished\n") != std::string::npos, out);
  ::unsetenv("FERRY_NO_DAEMON");
}

// The daemon's SSH link drops under a riding `ferry run`: the terminal hears it (link/state), the
// daemon reconnects, the run's stream is attached again at the next offset, nothing is lost or
// doubled.
BOOST_FIXTURE_TEST_CASE(a_riding_run_waits_out_the_daemons_reconnect, LinkedDaemon) {
  ferry::test::FerryProcess run(FERRY_BIN, a, {"run", "--", "sh", "-c", "echo one; while [ ! -e gate ]; do sleep 0.05; done; echo two"});
  BOOST_REQUIRE_MESSAGE(run.wait_out("one\n"), run.err());
  f.kill_all();  // sshd, the daemon's session and agent; the run's supervisor is in its own session
  BOOST_REQUIRE_MESSAGE(run.wait_out("lost the connection", 30s, true), run.err());
  f.start();
  ferry::test::write_file(f.home() / "a" / "gate", "");
  BOOST_TEST(run.wait(120s) == 0, run.err());
  BOOST_TEST(run.err().find("reconnected") != std::string::npos, run.err());
  BOOST_TEST(run.out() == "one\ntwo\n");
}

// A run's server forwards itself through the daemon's link while the riding `ferry run` lasts.
BOOST_FIXTURE_TEST_CASE(a_riding_runs_port_forwards_through_the_daemon, LinkedDaemon) {
  ferry::test::write_file(a / "site" / "index.html", "<p>served on the box</p>\n");  // the run's sync takes it
  const int logins = f.accepted_logins();
  ferry::test::FerryProcess run(FERRY_BIN, a, {"run", "--", "python3", "-u", "-c",
                                               "import subprocess, sys\n"
                                               "srv = subprocess.Popen([sys.executable, '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', 'site'])\n"
                                               "sys.stdin.readline()\n"
                                               "srv.terminate(); srv.wait()\n"},
                                true);
  BOOST_REQUIRE_MESSAGE(run.wait_out("\u2192 http://127.0.0.1:", 60s, true), run.err());
  std::smatch m;
  const std::string err = run.err();
  BOOST_REQUIRE_MESSAGE(std::regex_search(err, m, std::regex("port (\\d+) on the box \u2192 http://127\\.0\\.0\\.1:(\\d+)")), err);
  const int local_port = std::stoi(m[2].str());
  const int fd = ferry::test::tcp_connect("127.0.0.1", local_port);
  BOOST_REQUIRE(fd >= 0);
  ferry::test::write_all_fd(fd, "GET /index.html HTTP/1.0\r\n\r\n");
  const std::string response = ferry::test::read_to_eof(fd, 10s);
  ::close(fd);
  BOOST_TEST(response.ends_with("\r\n\r\n<p>served on the box</p>\n"), response);
  run.close_stdin();
  BOOST_TEST(run.wait() == 0, run.err());
  BOOST_TEST(f.accepted_logins() == logins, f.log());
}

// `ferry tunnel` rides too: the forward is the daemon's, for as long as the command lasts.
BOOST_FIXTURE_TEST_CASE(a_tunnel_rides_the_daemon_until_ctrl_c, LinkedDaemon) {
  const int logins = f.accepted_logins();
  ferry::test::EchoServer echo;  // on the box's loopback (the box is this machine)
  ferry::test::FerryProcess tunnel(FERRY_BIN, a, {"tunnel", "0:127.0.0.1:" + std::to_string(echo.port())});
  BOOST_REQUIRE_MESSAGE(tunnel.wait_out("Ctrl-C to stop", 30s, true), tunnel.err());
  BOOST_TEST(tunnel.err().find("through ferry (pid " + std::to_string(pid) + ")") != std::string::npos, tunnel.err());
  std::smatch m;
  const std::string out = tunnel.out();
  BOOST_REQUIRE_MESSAGE(std::regex_search(out, m, std::regex("127\\.0\\.0\\.1:(\\d+) \u2192 remote 127\\.0\\.0\\.1:")), out);
  const int port = std::stoi(m[1].str());
  const int fd = ferry::test::tcp_connect("127.0.0.1", port);
  BOOST_REQUIRE(fd >= 0);
  BOOST_REQUIRE(ferry::test::write_all_fd(fd, "ping through the daemon"));
  ::shutdown(fd, SHUT_WR);
  BOOST_TEST(ferry::test::read_to_eof(fd, 10s) == "ping through the daemon");
  ::close(fd);
  tunnel.signal(SIGINT);
  BOOST_TEST(tunnel.wait() == 0, tunnel.err());
  // Its connection ended: the daemon closed the forward.
  BOOST_TEST(ferry::test::eventually([&] {
    const int again = ferry::test::tcp_connect("127.0.0.1", port);
    if (again >= 0) ::close(again);
    return again < 0;
  }, 10s));
  BOOST_TEST(f.accepted_logins() == logins, f.log());
}

// `ferry env` and `ferry env sync` ask the daemon's link (its env/info and env/sync).
BOOST_AUTO_TEST_CASE(env_and_env_sync_ride_the_daemon) {
  SshdFixture f(logging_logins());
  f.trust_host_key();
  const fs::path a = make_project(f, "a");
  ::setenv("XDG_CACHE_HOME", (f.dir() / "cache").c_str(), 1);  // the daemon's mirror goes here
  BOOST_REQUIRE(run_ferry(a, {"sync"}) == 0);
  BOOST_REQUIRE(linked_daemon(a));
  const int logins = f.accepted_logins();
  std::string out;
  BOOST_TEST(run_ferry(a, {"env", "--json"}, &out) == 0, out);
  const json info = json::parse(out.substr(0, out.rfind('}') + 1), nullptr, false);
  BOOST_TEST(info.value("python", "").starts_with("3."), out);
  BOOST_TEST(info.value("sysPath", json::array()).size() > 0u, out);
  BOOST_TEST(run_ferry(a, {"env", "sync", "--no-venv", "--json", "--cap", "4194304"}, &out) == 0, out);
  const json report = json::parse(out.substr(0, out.rfind('}') + 1), nullptr, false);
  BOOST_TEST(report.value("filesTotal", 0) > 0, out);
  BOOST_TEST(fs::is_directory(report.value("mirror", "")), out);
  BOOST_TEST(report.value("mirror", "").starts_with((f.dir() / "cache").string()), out);
  BOOST_TEST(run_ferry(a, {"env", "sync", "--no-venv", "--cap", "4194304"}, &out) == 0, out);
  BOOST_TEST(out.find("ferry env sync: 0 files received") != std::string::npos, out);  // up to date, said as before
  BOOST_TEST(f.accepted_logins() == logins, f.log());
  ::unsetenv("XDG_CACHE_HOME");
}

BOOST_AUTO_TEST_CASE(an_idle_daemon_exits_and_ferry_json_can_turn_daemons_off) {
  SshdFixture f(logging_logins());
  f.trust_host_key();
  const fs::path a = make_project(f, "a");
  ::setenv("FERRY_DAEMON_IDLE", "1", 1);
  std::string out;
  BOOST_REQUIRE(run_ferry(a, {"sync"}, &out) == 0);
  ::unsetenv("FERRY_DAEMON_IDLE");
  const auto pid = linked_daemon(a);
  BOOST_REQUIRE(pid);
  BOOST_TEST(ferry::test::eventually([&] { return process_gone(*pid); }, 15s), "an idle daemon should exit after its 1 s");
  BOOST_TEST(!hello(a));
  BOOST_TEST(ferry::test::read_file(a / ".ferry/logs/daemon.log").find("exiting (idle for 1 s)") != std::string::npos);

  const fs::path b = make_project(f, "b", json{{"daemon", {{"idleMinutes", 0}}}});
  BOOST_REQUIRE(run_ferry(b, {"sync"}, &out) == 0);
  BOOST_TEST(!fs::exists(b / ".ferry/logs/daemon.log"), "idleMinutes 0: no daemon is started");
  BOOST_TEST(!hello(b));
  BOOST_TEST(run_ferry(b, {"daemon", "status", "--json"}, &out) == 1, out);
  BOOST_TEST(json::parse(out.substr(0, out.find('\n'))).value("live", true) == false, out);
}

BOOST_AUTO_TEST_CASE(an_editors_ferry_serve_takes_the_project_from_the_daemon) {
  SshdFixture f(logging_logins());
  f.trust_host_key();
  const fs::path a = make_project(f, "a");
  BOOST_REQUIRE(run_ferry(a, {"sync"}) == 0);
  const auto pid = linked_daemon(a);
  BOOST_REQUIRE(pid);
  BOOST_TEST(f.accepted_logins() == 2, f.log());
  {
    ferry::test::ServeClient editor(a);
    const json connected = editor.call("host/connect", json::object());
    BOOST_TEST(connected.contains("result"), connected.dump());  // not -32092: the daemon handed over
    BOOST_TEST(ferry::test::eventually([&] { return process_gone(*pid); }, 5s));
    const auto h = hello(a);
    BOOST_REQUIRE(h);
    BOOST_TEST(h->value("daemon", true) == false, h->dump());  // the editor's server answers now
    BOOST_TEST(f.accepted_logins() == 3, f.log());
    std::string out;
    ferry::test::write_file(a / "edited.py", "y = 2\n");
    BOOST_TEST(run_ferry(a, {"sync"}, &out) == 0, out);
    BOOST_TEST(f.accepted_logins() == 3, f.log());  // rode the editor's link
    BOOST_TEST(run_ferry(a, {"daemon", "stop"}, &out) == 1, out);
    BOOST_TEST(out.find("served by the editor's ferry serve") != std::string::npos, out);
    // A daemon never takes a project from an editor: it says who serves it and goes.
    BOOST_TEST(run_ferry(a, {"daemon", "run"}, &out) == 0, out);
    BOOST_TEST(out.find("is served by") != std::string::npos, out);
    BOOST_TEST(hello(a)->value("daemon", true) == false);
  }
}

BOOST_AUTO_TEST_CASE(a_daemon_killed_mid_sync_tears_no_file_and_the_next_sync_converges) {
  SshdFixture f(logging_logins());
  f.trust_host_key();
  const fs::path a = make_project(f, "a");
  constexpr int kFiles = 80;
  constexpr std::size_t kSize = 1 << 20;
  auto content = [](int i, int version) { return ferry::test::random_bytes<std::string>(kSize, i * 10 + version); };
  for (int i = 0; i < kFiles; ++i) ferry::test::write_file(a / "data" / (std::to_string(i) + ".bin"), content(i, 1));
  BOOST_REQUIRE(run_ferry(a, {"sync"}) == 0);
  const auto pid = linked_daemon(a);
  BOOST_REQUIRE(pid);
  for (int i = 0; i < kFiles; ++i) ferry::test::write_file(a / "data" / (std::to_string(i) + ".bin"), content(i, 2));
  // Killed once the first new version is on the box (renamed into place: a new inode), while the
  // rest is in flight or not sent yet.
  const fs::path box = f.home() / "a" / "data";
  auto inode = [&](int i) {
    struct stat st {};
    return ::stat((box / (std::to_string(i) + ".bin")).c_str(), &st) == 0 ? st.st_ino : 0;
  };
  std::vector<ino_t> before;
  for (int i = 0; i < kFiles; ++i) before.push_back(inode(i));
  ferry::test::FerryProcess riding(FERRY_BIN, a, {"sync"});
  bool mid = ferry::test::eventually([&] {
    for (int i = 0; i < kFiles; ++i)
      if (inode(i) != before[i]) return true;
    return false;
  }, 30s);
  BOOST_REQUIRE(mid);
  ::kill(static_cast<pid_t>(*pid), SIGKILL);
  const int rc = riding.wait();
  BOOST_TEST_MESSAGE("the riding sync ended with " << rc << ": " << riding.err());
  int old_ones = 0;
  for (int i = 0; i < kFiles; ++i) {
    const std::string on_box = ferry::test::read_file(box / (std::to_string(i) + ".bin"));
    BOOST_TEST((on_box == content(i, 1) || on_box == content(i, 2)), "file " << i << " is torn");
    old_ones += on_box == content(i, 1);
  }
  if (rc != 0) BOOST_TEST(riding.err().find("closed the connection") != std::string::npos, riding.err());
  BOOST_TEST_MESSAGE(old_ones << " of " << kFiles << " files were still old when the daemon died");
  std::string out;
  BOOST_TEST(run_ferry(a, {"sync"}, &out) == 0, out);  // on its own link: the dead daemon's socket is refused
  for (int i = 0; i < kFiles; ++i) BOOST_TEST(ferry::test::read_file(box / (std::to_string(i) + ".bin")) == content(i, 2));
  const auto next = linked_daemon(a);
  BOOST_TEST((next && *next != *pid), "the next command leaves a new daemon");
}

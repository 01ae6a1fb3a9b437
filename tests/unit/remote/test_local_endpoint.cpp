// LocalEndpoint against the real ferry-agent binary (and small shell stand-ins for broken ones).
#define BOOST_TEST_MODULE local_endpoint
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "ferry/version.hpp"
#include "helper/remote/agent_builds.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "protocol/agent_wire.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ferry::remote::LocalEndpoint;
using ferry::remote::LocalEndpointOptions;
using nlohmann::json;
namespace ec = ferry::protocol::error_code;

namespace {

using ferry::test::TempDir;

fs::path script(const TempDir& t, const std::string& name, const std::string& body) {
  fs::path p = t / name;
  std::ofstream(p) << "#!/bin/sh\n" << body;
  fs::permissions(p, fs::perms::owner_all);
  return p;
}

LocalEndpointOptions options(const TempDir& t, fs::path agent = FERRY_AGENT_PATH) {
  LocalEndpointOptions o;
  o.agent = std::move(agent);
  o.root = t.path() / "sandbox";
  return o;
}

// Waits for a condition another thread makes true, with a deadline instead of a fixed sleep.
template <class F>
bool eventually(F f, std::chrono::milliseconds limit = 5000ms) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!f()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

BOOST_AUTO_TEST_CASE(handshake_and_info) {
  TempDir t("ferry-endpoint");
  LocalEndpoint ep(options(t));
  auto info = ep.connect();
  BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? std::string() : info.error().message));
  BOOST_TEST(info->protocol_version == ferry::kAgentProtocolVersion);
  BOOST_TEST(info->version == ferry::kVersion);
  BOOST_TEST(info->pid == ep.child_pid());
  BOOST_TEST(info->root == (t.path() / "sandbox").string());
  BOOST_TEST(fs::is_directory(t.path() / "sandbox"));  // created by the agent
  BOOST_TEST(info->os == "Linux");
  BOOST_TEST(!info->arch.empty());
  BOOST_TEST(ep.info().pid == info->pid);
  BOOST_TEST(ep.connected());
  BOOST_TEST(ep.description().find((t.path() / "sandbox").string()) != std::string::npos);
}

// A terminal's Ctrl-C goes to its foreground process group: the local agent (the "box") must not
// be in ours, or `ferry sync`'s first Ctrl-C, meant to stop the sync after the requests in
// flight, killed the agent mid-listing ("the agent exited (killed by signal 2)").
BOOST_AUTO_TEST_CASE(the_agent_is_out_of_reach_of_our_terminal_signals) {
  // This test leads a process group of its own for a while, so the SIGINT below reaches only
  // it and what it starts, never the test runner.
  const pid_t runner_group = ::getpgid(0);
  BOOST_REQUIRE(::setpgid(0, 0) == 0);
  TempDir t("ferry-endpoint");
  LocalEndpoint ep(options(t));
  auto info = ep.connect();
  BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? std::string() : info.error().message));
  BOOST_TEST(::getpgid(ep.child_pid()) == ep.child_pid());
  BOOST_TEST(::getpgid(ep.child_pid()) != ::getpgid(0));
  // What a terminal does on Ctrl-C, to our group: a SIGINT we catch, as ferry sync does.
  struct sigaction sa {}, old {};
  sa.sa_handler = [](int) {};
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old);
  ::kill(0, SIGINT);
  ::sigaction(SIGINT, &old, nullptr);
  ::setpgid(0, runner_group);
  auto pong = ep.call("agent/ping", json{{"echo", "still here"}});
  BOOST_REQUIRE_MESSAGE(pong.has_value(), (pong ? std::string() : pong.error().message));
  BOOST_TEST((*pong)["echo"] == "still here");
}

BOOST_AUTO_TEST_CASE(fs_stat_inside_the_root_only) {
  TempDir t("ferry-endpoint");
  LocalEndpoint ep(options(t));
  BOOST_REQUIRE(ep.connect().has_value());
  std::ofstream(t.path() / "sandbox" / "a b ü.txt") << "hello";
  fs::permissions(t.path() / "sandbox" / "a b ü.txt", fs::perms::owner_read | fs::perms::owner_write);
  auto st = ep.call("fs/stat", {{"path", "a b ü.txt"}});
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST((*st)["exists"] == true);
  BOOST_TEST((*st)["type"] == "file");
  BOOST_TEST((*st)["size"] == 5);
  BOOST_TEST((*st)["mode"] == 0600);
  struct stat local {};
  BOOST_REQUIRE(::stat((t.path() / "sandbox" / "a b ü.txt").c_str(), &local) == 0);
  BOOST_TEST((*st)["mtimeNs"].get<long long>() == local.st_mtim.tv_sec * 1'000'000'000LL + local.st_mtim.tv_nsec);
  auto missing = ep.call("fs/stat", {{"path", "nope/x"}});
  BOOST_REQUIRE(missing.has_value());
  BOOST_TEST((*missing)["exists"] == false);
  auto escape = ep.call("fs/stat", {{"path", "../sandbox"}});
  BOOST_REQUIRE(!escape.has_value());
  BOOST_TEST(escape.error().code == ec::kInvalidParams);
  BOOST_TEST(escape.error().message.find("'..'") != std::string::npos, escape.error().message);
  auto unknown = ep.call("fs/explode", json::object());
  BOOST_REQUIRE(!unknown.has_value());
  BOOST_TEST(unknown.error().code == ec::kMethodNotFound);
}

BOOST_AUTO_TEST_CASE(hundred_concurrent_calls_from_four_threads) {
  TempDir t("ferry-endpoint");
  LocalEndpoint ep(options(t));
  BOOST_REQUIRE(ep.connect().has_value());
  std::atomic<int> right{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&, th] {
      for (int i = 0; i < 25; ++i) {
        json echo{{"thread", th}, {"i", i}, {"blob", json::binary(std::vector<std::uint8_t>(th * 1000 + i, 0xAB))}};
        auto r = ep.call("agent/ping", {{"echo", echo}});
        (r && (*r)["echo"] == echo) ? ++right : ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  BOOST_TEST(right.load() == 100);
  BOOST_TEST(wrong.load() == 0);
  BOOST_TEST(ep.pending_calls() == 0u);
}

BOOST_AUTO_TEST_CASE(many_requests_in_flight_at_once) {
  TempDir t("ferry-endpoint");
  LocalEndpoint ep(options(t));
  BOOST_REQUIRE(ep.connect().has_value());
  // One slow call must not hold back the replies of others issued after it on other threads;
  // the agent answers in order, so the fast ones finish right after it, all on one link.
  auto slow = std::async(std::launch::async, [&] { return ep.call("agent/ping", {{"delayMs", 300}, {"echo", "slow"}}); });
  BOOST_REQUIRE(eventually([&] { return ep.pending_calls() >= 1; }));
  std::vector<std::future<std::expected<json, ferry::protocol::ResponseError>>> fast;
  for (int i = 0; i < 20; ++i)
    fast.push_back(std::async(std::launch::async, [&ep, i] { return ep.call("agent/ping", {{"echo", i}}); }));
  BOOST_TEST(eventually([&] { return ep.pending_calls() >= 2; }));
  for (int i = 0; i < 20; ++i) {
    auto r = fast[i].get();
    BOOST_REQUIRE(r.has_value());
    BOOST_TEST((*r)["echo"] == i);
  }
  BOOST_TEST((*slow.get())["echo"] == "slow");
}

BOOST_AUTO_TEST_CASE(banner_noise_before_the_magic_line_is_tolerated) {
  TempDir t("ferry-endpoint");
  auto wrapper = script(t, "noisy-agent", std::string("echo 'Welcome to Ubuntu 22.04.4 LTS'\n"
                                                     "echo ' * Documentation:  https://help.ubuntu.com'\n"
                                                     "printf '\\033[1;32mconda (base)\\033[0m\\r\\n\\n'\n"
                                                     "printf 'prompt$ '\n"
                                                     "exec '") + FERRY_AGENT_PATH + "' \"$@\"\n");
  LocalEndpoint ep(options(t, wrapper));
  auto info = ep.connect();
  BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? std::string() : info.error().message));
  BOOST_TEST(info->version == ferry::kVersion);
  auto pong = ep.call("agent/ping", {{"echo", "through the noise"}});
  BOOST_REQUIRE(pong.has_value());
  BOOST_TEST((*pong)["echo"] == "through the noise");
}

BOOST_AUTO_TEST_CASE(version_mismatch_is_a_distinct_error) {
  TempDir t("ferry-endpoint");
  auto fake = script(t, "old-agent", "echo 'FERRY-AGENT 999 9.9.9'\nexec cat >/dev/null\n");
  LocalEndpoint ep(options(t, fake));
  auto info = ep.connect();
  BOOST_REQUIRE(!info.has_value());
  BOOST_TEST(info.error().code == ec::kAgentVersionMismatch);
  BOOST_TEST(info.error().message.starts_with("agent speaks protocol 999, this ferry speaks " +
                                              std::to_string(ferry::kAgentProtocolVersion)),
             info.error().message);
  BOOST_TEST((*info.error().data)["agentVersion"] == "9.9.9");
  BOOST_TEST(!ep.connected());
  BOOST_TEST(ep.child_pid() == -1);  // the fake was stopped and reaped
}

BOOST_AUTO_TEST_CASE(agent_killed_mid_call_fails_the_call_clearly) {
  TempDir t("ferry-endpoint");
  LocalEndpoint ep(options(t));
  auto info = ep.connect();
  BOOST_REQUIRE(info.has_value());
  auto started = std::chrono::steady_clock::now();
  auto call = std::async(std::launch::async, [&] { return ep.call("agent/ping", {{"delayMs", 30000}}, 60s); });
  BOOST_REQUIRE(eventually([&] { return ep.pending_calls() == 1; }));
  BOOST_REQUIRE(::kill(static_cast<pid_t>(info->pid), SIGKILL) == 0);
  BOOST_REQUIRE(call.wait_for(10s) == std::future_status::ready);
  auto r = call.get();
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().code == ec::kAgentUnavailable);
  BOOST_TEST(r.error().message.find("agent/ping") != std::string::npos, r.error().message);
  BOOST_TEST(r.error().message.find("killed by signal 9") != std::string::npos, r.error().message);
  BOOST_TEST((std::chrono::steady_clock::now() - started < 10s));
  // Later calls fail at once with the same reason.
  auto again = ep.call("agent/ping", json::object());
  BOOST_REQUIRE(!again.has_value());
  BOOST_TEST(again.error().message.find("killed by signal 9") != std::string::npos, again.error().message);
  BOOST_TEST(!ep.connected());
}

BOOST_AUTO_TEST_CASE(close_reaps_the_child) {
  TempDir t("ferry-endpoint");
  LocalEndpoint ep(options(t));
  BOOST_REQUIRE(ep.connect().has_value());
  pid_t pid = ep.child_pid();
  BOOST_REQUIRE(pid > 0);
  ep.close();
  BOOST_REQUIRE(ep.exit_status().has_value());
  BOOST_TEST(WIFEXITED(*ep.exit_status()));
  BOOST_TEST(WEXITSTATUS(*ep.exit_status()) == 0);  // agent/shutdown, not a kill
  int status = 0;
  errno = 0;
  BOOST_TEST(::waitpid(pid, &status, WNOHANG) == -1);  // already reaped: no zombie left
  BOOST_TEST(errno == ECHILD);
  auto after = ep.call("agent/ping", json::object());
  BOOST_REQUIRE(!after.has_value());
  BOOST_TEST(after.error().code == ec::kAgentUnavailable);
  ep.close();  // idempotent
}

BOOST_AUTO_TEST_CASE(a_hung_agent_is_killed_after_a_failed_connect) {
  TempDir t("ferry-endpoint");
  // Speaks the magic line, then never answers nor exits on EOF.
  auto stubborn = script(t, "stubborn", "echo 'FERRY-AGENT 1 0.0.1'\nexec sleep 600\n");
  LocalEndpoint ep(options(t, stubborn));
  auto info = ep.connect(300ms);
  BOOST_REQUIRE(!info.has_value());
  BOOST_TEST(info.error().message.find("agent/hello") != std::string::npos, info.error().message);
  BOOST_TEST(ep.child_pid() == -1);  // killed and reaped by connect's cleanup
}

BOOST_AUTO_TEST_CASE(call_timeout_cancels_and_the_link_survives) {
  TempDir t("ferry-endpoint");
  LocalEndpoint ep(options(t));
  BOOST_REQUIRE(ep.connect().has_value());
  auto late = ep.call("agent/ping", {{"delayMs", 400}}, 50ms);
  BOOST_REQUIRE(!late.has_value());
  BOOST_TEST(late.error().code == ec::kRequestCancelled);
  BOOST_TEST(late.error().message.find("within 50 ms") != std::string::npos);
  auto next = ep.call("agent/ping", {{"echo", 1}});
  BOOST_REQUIRE(next.has_value());
  BOOST_TEST((*next)["echo"] == 1);  // the late reply was dropped, not mistaken for this one
}

BOOST_AUTO_TEST_CASE(startup_failures_are_explained) {
  TempDir t("ferry-endpoint");
  LocalEndpoint missing(options(t, t.path() / "no-such-agent"));
  auto m = missing.connect();
  BOOST_REQUIRE(!m.has_value());
  BOOST_TEST(m.error().code == ec::kAgentUnavailable);
  BOOST_TEST(m.error().message.find("no-such-agent") != std::string::npos, m.error().message);

  auto crasher = script(t, "crasher", "echo 'bash: ferry-agent: cannot execute'\nexit 3\n");
  LocalEndpoint crash(options(t, crasher));
  auto c = crash.connect();
  BOOST_REQUIRE(!c.has_value());
  BOOST_TEST(c.error().message.find("exited with status 3") != std::string::npos, c.error().message);
  BOOST_TEST(c.error().message.find("cannot execute") != std::string::npos, c.error().message);

  auto silent = script(t, "silent", "exec cat\n");  // keeps stdout open, prints nothing
  LocalEndpoint quiet(options(t, silent));
  auto q = quiet.connect(200ms);
  BOOST_REQUIRE(!q.has_value());
  BOOST_TEST(q.error().message.find("no FERRY-AGENT line") != std::string::npos, q.error().message);

  auto flood = script(t, "flood", "yes 'motd motd motd motd'\n");
  LocalEndpoint noisy(options(t, flood));
  auto f = noisy.connect(5s);
  BOOST_REQUIRE(!f.has_value());
  BOOST_TEST(f.error().message.find("within the first") != std::string::npos, f.error().message);
}

BOOST_AUTO_TEST_CASE(sandbox_and_agent_lookup) {
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg-test", 1);
  BOOST_TEST(ferry::remote::default_sandbox_root("demo") == fs::path("/tmp/xdg-test/ferry/local/demo"));
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/home/someone", 1);
  BOOST_TEST(ferry::remote::default_sandbox_root("demo") == fs::path("/home/someone/.cache/ferry/local/demo"));
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
  BOOST_TEST(*ferry::remote::find_agent_binary() == fs::path(FERRY_AGENT_PATH));
  ::setenv("FERRY_AGENT", "/nonexistent/agent", 1);
  BOOST_TEST(!ferry::remote::find_agent_binary().has_value());
  ::unsetenv("FERRY_AGENT");
}

BOOST_AUTO_TEST_CASE(notifications_reach_the_handler) {
  TempDir t("ferry-endpoint");
  // A scripted agent: after the first byte of agent/hello (id 1) it answers it, sends a
  // notification, then reads until EOF. The frames are prepared here.
  using namespace ferry::protocol;
  std::ofstream(t.path() / "frames", std::ios::binary)
      << encode_agent_frame(make_result(1, json{{"protocolVersion", ferry::kAgentProtocolVersion},
                                                {"version", "scripted"},
                                                {"pid", 1},
                                                {"root", "/scripted"}}))
      << encode_agent_frame(Notification{"run/output", json{{"bytes", json::binary({0, 1, 2})}}});
  auto scripted = script(t, "scripted", "echo 'FERRY-AGENT " + std::to_string(ferry::kAgentProtocolVersion) +
                                           " scripted'\nhead -c 1 >/dev/null\ncat '" + (t.path() / "frames").string() +
                                           "'\nexec cat >/dev/null\n");
  LocalEndpoint ep(options(t, scripted));
  std::mutex m;
  std::condition_variable cv;
  std::vector<Notification> seen;
  auto subscription = ep.subscribe([&](const Notification& n) {
    std::lock_guard lock(m);
    seen.push_back(n);
    cv.notify_all();
  });
  auto info = ep.connect(5s);
  BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? std::string() : info.error().message));
  BOOST_TEST(info->version == "scripted");
  std::unique_lock lock(m);
  BOOST_REQUIRE(cv.wait_for(lock, 5s, [&] { return !seen.empty(); }));
  BOOST_TEST(seen[0].method == "run/output");
  BOOST_TEST(seen[0].params["bytes"] == json::binary({0, 1, 2}));
}

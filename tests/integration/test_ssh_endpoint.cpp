// SshEndpoint against a real sshd and the real ferry-agent: install over SFTP and reuse, reinstall
// when the build differs, concurrent installs, .bashrc noise before the magic line, reconnect
// after sshd is killed and restarted, dead-link detection under SIGSTOP, what happens to
// idempotent and non-idempotent calls caught in flight, and that an agent's death (on the link or
// a bulk lane) fails the calls in flight within 2 s however it shows.
#define BOOST_TEST_MODULE ssh_endpoint
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "ferry/version.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "tests/integration/endpoint_options.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/timing_bound.hpp"
#include "tests/support/wait_for.hpp"

using namespace ferry::remote;
using ferry::test::SshdFixture;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// Collects host/stateChanged events and lets a test wait for one.
using ferry::test::StateLog;

SshEndpointOptions options_for(const SshdFixture& f, StateLog* log = nullptr) { return ferry::test::endpoint_options_for(f, log); }

fs::path agent_dir(const SshdFixture& f) { return f.home() / ".cache/ferry/agent" / ferry::kVersion; }

// The installed agents: ferry-agent-<arch>-<16 hex digits> files in the version's directory.
std::vector<fs::path> agents_in(const SshdFixture& f) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(agent_dir(f), ec))
    if (d.path().filename().string().starts_with("ferry-agent")) found.push_back(d.path());
  return found;
}

// The one installed agent (the test fails if there are none or several).
fs::path installed_agent(const SshdFixture& f) {
  auto found = agents_in(f);
  BOOST_REQUIRE_EQUAL(found.size(), 1u);
  return found.front();
}

}  // namespace

BOOST_AUTO_TEST_CASE(installs_the_agent_then_reuses_it) {
  SshdFixture f;
  f.trust_host_key();
  {
    SshEndpoint e(options_for(f));
    auto info = e.connect(20s);
    BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? "" : info.error().message) << "\n" << f.log());
    BOOST_TEST(info->version == ferry::kVersion);
    BOOST_TEST(info->root == (f.home() / "project").string());
    BOOST_TEST(e.install_report().installed);
    BOOST_TEST(e.install_report().remote_path == installed_agent(f).string());
    auto ping = e.call("agent/ping", ferry::protocol::json::object());
    BOOST_TEST(ping.has_value());
  }
  struct stat st {};
  BOOST_REQUIRE(::stat(installed_agent(f).c_str(), &st) == 0);
  // The install is the user's alone (issue #41): the agent 0700 in a 0700 dir, agent.log 0600.
  BOOST_TEST((st.st_mode & 0777) == 0700u);
  BOOST_REQUIRE(::stat(installed_agent(f).parent_path().c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0700u);
  BOOST_REQUIRE(::stat((installed_agent(f).parent_path() / "agent.log").c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  BOOST_TEST(fs::file_size(installed_agent(f)) == fs::file_size(FERRY_AGENT_PATH));
  // No temp files left behind.
  int entries = 0;
  for (const auto& d : fs::directory_iterator(installed_agent(f).parent_path())) entries += d.path().filename().string().ends_with(".tmp");
  BOOST_TEST(entries == 0);
  SshEndpoint again(options_for(f));
  BOOST_REQUIRE(again.connect(20s).has_value());
  BOOST_TEST(!again.install_report().installed);
}

// Another build's agent (its own hash in its name) and one under the pre-hash name are not
// started: this build's is installed beside them, and they are removed.
BOOST_AUTO_TEST_CASE(reinstalls_when_the_installed_build_differs) {
  SshdFixture f;
  f.trust_host_key();
  fs::create_directories(agent_dir(f));
  for (const char* name : {"ferry-agent", "ferry-agent-0123456789abcdef"}) {
    std::ofstream(agent_dir(f) / name) << "#!/bin/sh\necho an old agent\n";
    fs::permissions(agent_dir(f) / name, fs::perms::owner_all);
  }
  SshEndpoint e(options_for(f));
  auto info = e.connect(20s);
  BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? "" : info.error().message));
  BOOST_TEST(e.install_report().installed);
  const fs::path ours = installed_agent(f);  // the old two are gone
  BOOST_TEST(ours.filename().string().size() == std::string("ferry-agent-x86_64-").size() + 16);
  BOOST_TEST(e.install_report().remote_path == ours.string());
  BOOST_TEST(fs::file_size(ours) == fs::file_size(FERRY_AGENT_PATH));
}

BOOST_AUTO_TEST_CASE(two_helpers_installing_at_once_both_succeed) {
  SshdFixture f;
  f.trust_host_key();
  auto run = [&] {
    SshEndpoint e(options_for(f));
    auto info = e.connect(30s);
    if (!info) return info.error().message;
    auto ping = e.call("agent/ping", ferry::protocol::json::object());
    return ping ? std::string("ok") : ping.error().message;
  };
  auto a = std::async(std::launch::async, run);
  auto b = std::async(std::launch::async, run);
  BOOST_TEST(a.get() == "ok");
  BOOST_TEST(b.get() == "ok");
  BOOST_TEST(fs::file_size(installed_agent(f)) == fs::file_size(FERRY_AGENT_PATH));
}

BOOST_AUTO_TEST_CASE(login_noise_before_the_magic_line_is_tolerated) {
  SshdFixture f(ferry::test::SshdOptions{.extra_sshd_config = "", .bashrc =
      "echo '*** Welcome to the GPU box ***'\necho 'conda: base activated'\necho 'warning: locale' >&2\nprintf '\\x1b[1mbold\\x1b[0m\\n'\n"});
  f.trust_host_key();
  SshEndpoint e(options_for(f));
  auto info = e.connect(20s);
  BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? "" : info.error().message));
  BOOST_TEST(e.call("agent/ping", ferry::protocol::json::object()).has_value());
}

BOOST_AUTO_TEST_CASE(unknown_host_reports_the_fingerprint_in_error_data) {
  SshdFixture f;
  SshEndpoint e(options_for(f));
  auto info = e.connect(20s);
  BOOST_REQUIRE(!info.has_value());
  BOOST_REQUIRE(info.error().data.has_value());
  BOOST_TEST((*info.error().data)["kind"] == "hostKeyUnknown");
  BOOST_TEST(info.error().message.find(f.host_key_fingerprint()) != std::string::npos);
}

BOOST_AUTO_TEST_CASE(reconnects_after_sshd_is_killed_and_restarted) {
  SshdFixture f;
  f.trust_host_key();
  StateLog log;
  auto o = options_for(f, &log);
  o.backoff_initial = 200ms;
  SshEndpoint e(o);
  BOOST_REQUIRE(e.connect(20s).has_value());
  auto before = log.size();
  const auto killed = std::chrono::steady_clock::now();
  f.kill_all();  // connections drop with the server
  BOOST_REQUIRE(log.wait_for("reconnecting", before, 10s));
  f.start();
  const auto up = std::chrono::steady_clock::now();
  BOOST_REQUIRE_MESSAGE(log.wait_for("connected", before, 60s), "no reconnect");
  auto took = std::chrono::steady_clock::now() - up;
  // Designed: each backoff step is the sum of those before it plus the first, so the sleep under
  // way when sshd is back ends within the outage plus backoff_initial; then one connect, within
  // its configured deadline. Held to ferry::test::loaded_bound of that (tests/support/timing_bound.hpp).
  const auto designed = (up - killed) + o.backoff_initial + o.session.connect_timeout;
  BOOST_TEST(took < ferry::test::loaded_bound(designed),
             "reconnected " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms after sshd was back (designed "
                            << std::chrono::duration_cast<std::chrono::milliseconds>(designed).count() << " ms)");
  BOOST_TEST(e.reconnect_count() == 1);
  auto ping = e.call("agent/ping", ferry::protocol::json::object(), 10s);
  BOOST_TEST(ping.has_value());
}

BOOST_AUTO_TEST_CASE(frozen_link_is_detected_and_calls_in_flight_are_handled) {
  SshdFixture f;
  f.trust_host_key();
  StateLog log;
  auto o = options_for(f, &log);
  o.keepalive_interval = 2s;
  o.keepalive_count_max = 2;
  o.backoff_initial = 200ms;
  o.idempotent = [](std::string_view m) { return m == "agent/ping"; };
  SshEndpoint e(o);
  BOOST_REQUIRE(e.connect(20s).has_value());
  auto before = log.size();
  f.pause();
  auto frozen = std::chrono::steady_clock::now();
  // Both calls are in flight when the link dies: the idempotent one waits for the reconnect and
  // succeeds; the other fails saying it was not retried.
  auto safe = std::async(std::launch::async, [&] { return e.call("agent/ping", ferry::protocol::json::object(), 40s); });
  auto unsafe = std::async(std::launch::async, [&] { return e.call("agent/hello", ferry::protocol::json{{"protocolVersion", ferry::kAgentProtocolVersion}, {"helperVersion", ferry::kVersion}}, 40s); });
  // Designed: no reply for interval * count, noticed at the keepalive loop's next 250 ms tick.
  const auto designed = o.keepalive_interval * o.keepalive_count_max + 250ms;
  BOOST_REQUIRE_MESSAGE(log.wait_for("reconnecting", before, 60s), "the frozen link was never noticed");
  auto took = std::chrono::steady_clock::now() - frozen;
  BOOST_TEST(took <= ferry::test::loaded_bound(designed),
             "dead link noticed after " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms (designed "
                                        << std::chrono::duration_cast<std::chrono::milliseconds>(designed).count() << " ms)");
  auto u = unsafe.get();
  BOOST_REQUIRE(!u.has_value());
  BOOST_TEST(u.error().message.find("not retried") != std::string::npos, u.error().message);
  f.resume();
  auto s = safe.get();
  BOOST_TEST(s.has_value(), (s ? "" : s.error().message));
  BOOST_TEST(e.reconnect_count() >= 1);
}

BOOST_AUTO_TEST_CASE(backoff_doubles_up_to_the_cap_and_never_gives_up) {
  SshdFixture f;
  f.trust_host_key();
  StateLog log;
  auto o = options_for(f, &log);
  o.backoff_initial = 50ms;
  o.backoff_max = 200ms;
  SshEndpoint e(o);
  BOOST_REQUIRE(e.connect(20s).has_value());
  auto before = log.size();
  f.kill_all();  // and leave it down: every attempt is refused at once
  // Wait for the sixth failed attempt's report.
  {
    std::unique_lock lk(log.m);
    BOOST_REQUIRE(log.cv.wait_for(lk, 20s, [&] {
      int n = 0;
      for (std::size_t i = before; i < log.states.size(); ++i) n += log.states[i].attempt > 0;
      return n >= 6;
    }));
  }
  std::vector<long long> delays;
  {
    std::lock_guard lk(log.m);
    for (std::size_t i = before; i < log.states.size(); ++i)
      if (log.states[i].state == ferry::protocol::LinkState::reconnecting && log.states[i].attempt > 0) delays.push_back(log.states[i].retry_in_ms);
  }
  BOOST_REQUIRE(delays.size() >= 6u);
  std::vector<long long> expect{50, 100, 200, 200, 200, 200};
  BOOST_TEST(std::vector<long long>(delays.begin(), delays.begin() + 6) == expect, boost::test_tools::per_element());
  // A call meanwhile waits for the link, then reports that it is still reconnecting.
  auto r = e.call("agent/ping", ferry::protocol::json::object(), 300ms);
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().message.find("still reconnecting") != std::string::npos, r.error().message);
  // And when the server comes back, so does the link.
  auto n = log.size();
  f.start();
  BOOST_TEST(log.wait_for("connected", n, 10s));
  BOOST_TEST(e.call("agent/ping", ferry::protocol::json::object(), 10s).has_value());
}

namespace {

using Clock = std::chrono::steady_clock;
using ferry::protocol::json;

// The promise (docs/ssh.md, "Keepalive and reconnect"): a dead agent fails every call within 2 s.
constexpr auto kDeathNoticed = 2s;

long long ms_since(Clock::time_point t) { return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count(); }

// Bytes waiting in the stdin pipe of `pid` and the pipe's size; {-1, 0} when it cannot be seen.
std::pair<int, int> stdin_pipe_fill(pid_t pid) {
  const int fd = ::open(("/proc/" + std::to_string(pid) + "/fd/0").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {-1, 0};
  int queued = -1;
  (void)::ioctl(fd, FIONREAD, &queued);
  const int size = ::fcntl(fd, F_GETPIPE_SZ);
  ::close(fd);
  return {queued, size};
}

// A second writer on the stdout pipe of `pid`, as a process the agent started would hold it: when
// the agent dies, sshd then sends its exit signal but no EOF and no CLOSE.
int hold_stdout_of(pid_t pid) { return ::open(("/proc/" + std::to_string(pid) + "/fd/1").c_str(), O_WRONLY | O_CLOEXEC); }

// SIGKILL to `pid` while `call` is in flight; checks that the call fails within the promise.
template <class Call>
void kill_and_expect_failure(pid_t pid, std::future<Call>& call, const std::string& what) {
  const auto killed = Clock::now();
  BOOST_REQUIRE(::kill(pid, SIGKILL) == 0);
  BOOST_REQUIRE_MESSAGE(call.wait_for(60s) == std::future_status::ready, what << ": the call never ended");
  const auto took = ms_since(killed);
  auto r = call.get();
  BOOST_TEST_MESSAGE(what << ": failed " << took << " ms after the kill: " << (r ? std::string("(answered)") : r.error().message));
  BOOST_TEST(!r.has_value(), what);
  BOOST_TEST(std::chrono::milliseconds(took) < ferry::test::loaded_bound(kDeathNoticed),
             what << ": failed " << took << " ms after the agent died (promised: " << kDeathNoticed.count() << " s)");
}

SshEndpointOptions no_reconnect(const SshdFixture& f) {
  auto o = options_for(f);
  o.reconnect = false;  // the failure itself is what is timed, not a retry on a new link
  return o;
}

}  // namespace

// Each way an agent's death reaches the helper fails the calls in flight at once, not at their
// timeouts: EOF (a call waiting for its reply), a request stuck on a full channel window (the
// agent had stopped reading), and an exit signal with no EOF (its stdout held by another process).
BOOST_AUTO_TEST_CASE(a_dead_agent_fails_every_call_in_flight_within_2_s) {
  SshdFixture f;
  f.trust_host_key();
  {
    SshEndpoint e(no_reconnect(f));
    auto info = e.connect(20s);
    BOOST_REQUIRE(info.has_value());
    auto call = std::async(std::launch::async, [&] { return e.call("agent/ping", json{{"delayMs", 30000}}, 60s); });
    kill_and_expect_failure(info->pid, call, "waiting for a reply");
  }
  {
    SshEndpoint e(no_reconnect(f));
    auto info = e.connect(20s);
    BOOST_REQUIRE(info.has_value());
    BOOST_REQUIRE(::kill(info->pid, SIGSTOP) == 0);
    // 32 MiB cannot fit in the pipe, sshd's buffer and the window: the write blocks on the window.
    auto call = std::async(std::launch::async, [&] { return e.call("agent/ping", json{{"echo", std::string(32u << 20, 'x')}}, 60s); });
    const bool full = ferry::test::eventually([&] {
      const auto [queued, size] = stdin_pipe_fill(info->pid);
      return size > 0 && queued >= size - (64 << 10);
    }, 20s);
    BOOST_REQUIRE_MESSAGE(full, "the stopped agent's stdin never filled up");
    BOOST_TEST((call.wait_for(0s) == std::future_status::timeout), "the request was not blocked");
    kill_and_expect_failure(info->pid, call, "blocked on a full window");
  }
  {
    SshEndpoint e(no_reconnect(f));
    auto info = e.connect(20s);
    BOOST_REQUIRE(info.has_value());
    const int held = hold_stdout_of(info->pid);
    BOOST_REQUIRE(held >= 0);
    auto call = std::async(std::launch::async, [&] { return e.call("agent/ping", json{{"delayMs", 30000}}, 60s); });
    kill_and_expect_failure(info->pid, call, "exit signal without EOF");
    ::close(held);
  }
}

// The same on a bulk lane: its agent's exit signal (no EOF: its stdout held) fails the lane's call.
BOOST_AUTO_TEST_CASE(a_dead_lane_agent_fails_its_calls_within_2_s) {
  SshdFixture f;
  f.trust_host_key();
  auto o = no_reconnect(f);
  o.bulk_lanes = 1;
  o.bulk_connections = 0;  // the lane is a channel of the link's own connection
  SshEndpoint e(o);
  auto info = e.connect(20s);
  BOOST_REQUIRE(info.has_value());
  BOOST_REQUIRE(e.bulk_lanes() == 1u);
  BOOST_REQUIRE(e.call_lane(0, "agent/ping", json::object(), 20s).has_value());  // the lane is up
  pid_t lane_agent = -1;
  for (pid_t p : ferry::test::process_tree(f.pid()))
    if (p != info->pid && ferry::test::comm_of(p).starts_with("ferry-agent")) lane_agent = p;
  BOOST_REQUIRE(lane_agent > 0);
  const int held = hold_stdout_of(lane_agent);
  BOOST_REQUIRE(held >= 0);
  auto call = std::async(std::launch::async, [&] { return e.call_lane(0, "agent/ping", json{{"delayMs", 30000}}, 60s); });
  kill_and_expect_failure(lane_agent, call, "lane: exit signal without EOF");
  ::close(held);
  BOOST_TEST(e.call("agent/ping", json::object(), 10s).has_value(), "the link's own agent is untouched");
}

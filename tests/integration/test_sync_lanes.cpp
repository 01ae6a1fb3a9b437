// Bulk lanes (docs/sync.md, "Long links") over the real sshd: one big file pushed over the main
// agent and three lanes (on three extra SSH connections) arrives byte-exact, and the lanes carried
// parts of it; a lane's agent killed mid-transfer, or one lane connection of several dropped (its
// sshd killed), costs only its chunks, which go over the main agent (the push still succeeds,
// byte-exact, and the next push converges); kill points in the middle of a multi-lane transfer (the session's sshd, every
// agent, or the main agent alone) leave the old file or the new one, never a torn one, and the
// next push converges.
#define BOOST_TEST_MODULE sync_lanes
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "helper/remote/ssh_endpoint.hpp"
#include "helper/sync/sync_engine.hpp"
#include "tests/integration/endpoint_options.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using ferry::test::read_file;
using ferry::test::write_file;

namespace {

constexpr int kLanes = 3;
constexpr std::size_t kBigBytes = 40u << 20;  // five 8 MiB chunks and a tail: every lane gets some

remote::SshEndpointOptions lane_options(const test::SshdFixture& f) {
  remote::SshEndpointOptions o = test::endpoint_options_for(f);
  o.session.connect_timeout = 5s;
  o.reconnect = false;  // a cut link fails this push; the test connects again for the next one
  o.bulk_lanes = kLanes;  // loopback would get none by itself
  return o;
}

sync::SyncOptions push_options() {
  sync::SyncOptions o;
  o.stream_above = 1u << 20;
  return o;
}

using ferry::test::random_bytes;

// A push whose `o.progress` kills part of the transfer mid-file: it must complete anyway, with
// no errors and nothing left unstable (the lost chunks go again over what is left).
void push_through_a_loss(remote::SshEndpoint& ep, const fs::path& local, const sync::SyncOptions& o) {
  sync::SyncEngine engine(ep, sync::SyncTarget{local, "", "ferry-test", "~/project", {}, {}});
  auto s = engine.push(o);
  BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
  BOOST_TEST(s->errors.empty(), (s->errors.empty() ? "" : s->errors.front()));
  BOOST_TEST(s->unstable.empty());
}

using test::comm_of;
using test::parent_of;

// The ferry-agent processes below the fixture's sshd: the main agent and the lanes' agents.
std::vector<pid_t> agents(const test::SshdFixture& f) {
  std::vector<pid_t> out;
  for (pid_t p : test::process_tree(f.pid()))
    if (comm_of(p).starts_with("ferry-agent") && !comm_of(parent_of(p)).starts_with("ferry-agent")) out.push_back(p);
  return out;
}

// The session sshd processes (direct children of the listener).
std::vector<pid_t> sessions(const test::SshdFixture& f) {
  std::vector<pid_t> out;
  for (pid_t p : test::process_tree(f.pid()))
    if (p != f.pid() && parent_of(p) == f.pid()) out.push_back(p);
  return out;
}

// Resident memory of a process in KiB (0 once it is gone).
std::uint64_t rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("VmRSS:")) return std::stoull(line.substr(6));
  return 0;
}

bool has_temp_files(const fs::path& root) {
  for (auto& e : fs::recursive_directory_iterator(root))
    if (e.path().filename().string().starts_with(".ferry-tmp.")) return true;
  return false;
}

// A push over a fresh link with lanes that must succeed: no errors, `name` byte-exact remotely.
void converge(const test::SshdFixture& f, const fs::path& local, const fs::path& remote, const std::string& name,
              const std::string& when) {
  remote::SshEndpoint ep(lane_options(f));
  auto info = ep.connect(30s);
  BOOST_REQUIRE_MESSAGE(info.has_value(), when << ": connect: " << (info ? "" : info.error().message));
  {
    sync::SyncEngine engine(ep, sync::SyncTarget{local, "", "ferry-test", "~/project", {}, {}});
    auto s = engine.push(push_options());
    BOOST_REQUIRE_MESSAGE(s.has_value(), when << ": " << (s ? "" : s.error().message));
    BOOST_TEST(s->errors.empty(), when << ": " << (s->errors.empty() ? "" : s->errors.front()));
    BOOST_TEST(s->conflicts.empty(), when);
  }
  ep.close();
  BOOST_TEST((read_file(remote / name) == read_file(local / name)), when << ": the remote file differs");
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_big_file_over_the_lanes_arrives_byte_exact) {
  std::mt19937_64 rng(19);
  test::SshdFixture f;
  f.trust_host_key();
  const fs::path local = f.dir() / "local", remote = f.home() / "project";
  const std::string big = random_bytes<std::string>(rng, kBigBytes + 12345);
  write_file(local / "ckpt.bin", big);
  write_file(local / "train.py", "print('hi')\n");
  remote::SshEndpoint ep(lane_options(f));
  BOOST_REQUIRE(ep.connect(30s).has_value());
  {
    sync::SyncEngine engine(ep, sync::SyncTarget{local, "", "ferry-test", "~/project", {}, {}});
    auto s = engine.push(push_options());
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    BOOST_TEST(s->errors.empty(), (s->errors.empty() ? "" : s->errors.front()));
    BOOST_TEST(s->files_sent == 2u);
  }
  BOOST_TEST(ep.live_lanes() == static_cast<std::size_t>(kLanes));
  // Every 8 MiB chunk over a lane, none over the main agent: its one window would hold the
  // lanes' placed appends behind megabytes of data.
  BOOST_TEST(ep.lane_calls() == (kBigBytes + 12345 + (8u << 20) - 1) / (8u << 20));
  BOOST_TEST(agents(f).size() == static_cast<std::size_t>(kLanes + 1));
  // One lane per extra connection (kAutoBulkConnections is more than kLanes): an sshd each.
  BOOST_TEST(ep.live_lane_connections() == static_cast<std::size_t>(kLanes));
  BOOST_TEST(sessions(f).size() == static_cast<std::size_t>(kLanes + 1));
  // Idle after megabytes, each agent gives its freed heap back (lanes live as long as the link):
  // every one of them ends under 48 MiB resident (they held ~95 MB each before).
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  std::ostringstream rss;
  for (bool all_small = false; !all_small;) {
    rss.str("");
    all_small = true;
    for (pid_t p : agents(f)) {
      const std::uint64_t kib = rss_kib(p);
      rss << kib / 1024 << " MiB ";
      all_small = all_small && kib < (48u << 10);
    }
    if (!all_small && std::chrono::steady_clock::now() > deadline) break;
    if (!all_small) std::this_thread::sleep_for(100ms);  // polling a condition, with a deadline
  }
  BOOST_TEST_MESSAGE("agents' resident memory after going idle: " << rss.str());
  for (pid_t p : agents(f)) BOOST_TEST(rss_kib(p) < (48u << 10), "agent " << p << " still holds " << rss_kib(p) / 1024 << " MiB");
  ep.close();
  BOOST_TEST((read_file(remote / "ckpt.bin") == big));
  BOOST_TEST(read_file(remote / "train.py") == "print('hi')\n");
  BOOST_TEST(!has_temp_files(remote));
}

// The lanes are asked for as soon as the link is up when a file over stream_above is new to the
// manifest (their connections then open while the remote is listed); a push whose big files the
// manifest already has asks for none, so a no-op or a small change on a long link opens nothing.
BOOST_AUTO_TEST_CASE(lanes_are_opened_only_for_a_big_file_new_to_the_manifest) {
  std::mt19937_64 rng(23);
  test::SshdFixture f;
  f.trust_host_key();
  const fs::path local = f.dir() / "local", remote = f.home() / "project";
  const std::string big = random_bytes<std::string>(rng, 3u << 20);
  write_file(local / "ckpt.bin", big);
  const sync::SyncTarget target{local, "", "ferry-test", "~/project", {}, {}};
  auto push = [&](remote::SshEndpoint& ep) {
    sync::SyncEngine engine(ep, target);
    auto s = engine.push(push_options());
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    BOOST_TEST(s->errors.empty(), (s->errors.empty() ? "" : s->errors.front()));
    BOOST_TEST(s->files_sent == 1u);
  };
  {
    remote::SshEndpoint ep(lane_options(f));
    BOOST_REQUIRE(ep.connect(30s).has_value());
    push(ep);
    BOOST_TEST(ep.lanes_asked());
    BOOST_TEST(ep.lane_calls() > 0u);
    ep.close();
  }
  write_file(local / "notes.txt", "a small new file\n");
  remote::SshEndpoint ep(lane_options(f));
  BOOST_REQUIRE(ep.connect(30s).has_value());
  push(ep);
  BOOST_TEST(!ep.lanes_asked(), "a push with no big file to stream asked for lanes");
  BOOST_TEST(ep.lane_calls() == 0u);
  ep.close();
  BOOST_TEST((read_file(remote / "ckpt.bin") == big));
  BOOST_TEST(read_file(remote / "notes.txt") == "a small new file\n");
}

BOOST_AUTO_TEST_CASE(a_lane_killed_mid_transfer_costs_only_its_chunks) {
  std::mt19937_64 rng(20);
  test::SshdFixture f;
  f.trust_host_key();
  const fs::path local = f.dir() / "local", remote = f.home() / "project";
  const std::string big = random_bytes<std::string>(rng, kBigBytes * 2);
  write_file(local / "ckpt.bin", big);
  remote::SshEndpoint ep(lane_options(f));
  auto info = ep.connect(30s);
  BOOST_REQUIRE(info.has_value());
  const pid_t main_agent = static_cast<pid_t>(info->pid);
  std::mutex mu;
  pid_t killed = -1;
  sync::SyncOptions o = push_options();
  o.progress = [&](std::uint64_t done, std::uint64_t total) {
    std::lock_guard lock(mu);
    if (killed > 0 || done * 4 < total) return;
    // A lane's agent while parts are still to come: its in-flight part fails, later ones go main.
    for (pid_t p : agents(f))
      if (p != main_agent && ::kill(p, SIGKILL) == 0) {
        killed = p;
        return;
      }
  };
  push_through_a_loss(ep, local, o);
  BOOST_TEST(killed > 0, "no lane agent was there to kill");
  BOOST_TEST(ep.live_lanes() == static_cast<std::size_t>(kLanes - 1));
  ep.close();
  BOOST_TEST((read_file(remote / "ckpt.bin") == big), "the remote file differs");
  BOOST_TEST(!has_temp_files(remote));
}

BOOST_AUTO_TEST_CASE(a_lane_connection_dropped_mid_transfer_costs_only_its_chunks) {
  std::mt19937_64 rng(22);
  test::SshdFixture f;
  f.trust_host_key();
  const fs::path local = f.dir() / "local", remote = f.home() / "project";
  const std::string big = random_bytes<std::string>(rng, kBigBytes * 2);
  write_file(local / "ckpt.bin", big);
  remote::SshEndpointOptions options = lane_options(f);
  options.bulk_lanes = 4;
  options.bulk_connections = 2;  // two lanes on each of two extra connections
  remote::SshEndpoint ep(options);
  auto info = ep.connect(30s);
  BOOST_REQUIRE(info.has_value());
  const pid_t main_agent = static_cast<pid_t>(info->pid);
  std::mutex mu;
  std::vector<pid_t> killed;
  std::size_t connections_before = 0;
  sync::SyncOptions o = push_options();
  o.progress = [&](std::uint64_t done, std::uint64_t total) {
    std::lock_guard lock(mu);
    // Once a quarter is sent and both lane connections are up (the lanes' first chunks wait for
    // them), one connection's sshd processes die; its agents lose their channel with them.
    if (!killed.empty() || done * 4 < total || ep.live_lane_connections() < 2) return;
    connections_before = ep.live_lane_connections();
    for (pid_t s : sessions(f)) {
      auto tree = test::process_tree(s);
      bool main_here = std::find(tree.begin(), tree.end(), main_agent) != tree.end();
      bool lane_here = std::any_of(tree.begin(), tree.end(), [](pid_t p) { return comm_of(p).starts_with("ferry-agent"); });
      if (main_here || !lane_here) continue;
      for (pid_t p : tree)
        if (comm_of(p).starts_with("sshd") && ::kill(p, SIGKILL) == 0) killed.push_back(p);
      return;
    }
  };
  push_through_a_loss(ep, local, o);
  BOOST_TEST(!killed.empty(), "no lane connection was there to drop");
  BOOST_TEST(connections_before == 2u);
  BOOST_TEST(ep.connected(), "the main link went down with a lane connection");
  BOOST_TEST(ep.live_lane_connections() == 1u);
  BOOST_TEST(ep.live_lanes() == 2u);
  ep.close();
  BOOST_TEST((read_file(remote / "ckpt.bin") == big), "the remote file differs");
  BOOST_TEST(!has_temp_files(remote));
  // The next push (a changed file, over a fresh link with its lane connections) converges.
  write_file(local / "ckpt.bin", random_bytes<std::string>(rng, kBigBytes));
  converge(f, local, remote, "ckpt.bin", "after the dropped lane connection");
  BOOST_TEST(!has_temp_files(remote));
}

BOOST_AUTO_TEST_CASE(kill_points_in_a_multi_lane_transfer_never_tear_the_file_and_the_next_push_converges) {
  std::mt19937_64 rng(21);
  test::SshdFixture f;
  f.trust_host_key();
  const fs::path local = f.dir() / "local", remote = f.home() / "project";
  write_file(local / "train.py", "print('hi')\n");
  converge(f, local, remote, "train.py", "first push");
  enum class Victim { session, all_agents, main_agent };
  int point = 0, fired = 0;
  for (Victim victim : {Victim::session, Victim::all_agents, Victim::main_agent}) {
    for (double fraction : {0.15, 0.5, 0.85}) {
      // A new big file each time: new files are what goes in chunks over the lanes.
      ++point;
      const std::string name = "ckpt-" + std::to_string(point) + ".bin";
      const std::string content = random_bytes<std::string>(rng, kBigBytes + (rng() % 4096));
      write_file(local / name, content);
      const std::string where = "point " + std::to_string(point) + ": " +
                                (victim == Victim::session ? "session sshd" : victim == Victim::all_agents ? "every agent" : "main agent") +
                                " killed after " + std::to_string(static_cast<int>(fraction * 100)) + "% of the bytes";
      BOOST_TEST_MESSAGE(where);
      bool cut = false;
      {
        remote::SshEndpoint ep(lane_options(f));
        auto info = ep.connect(30s);
        BOOST_REQUIRE(info.has_value());
        const pid_t main_agent = static_cast<pid_t>(info->pid);
        std::mutex mu;
        bool done_kill = false;
        sync::SyncOptions o = push_options();
        o.progress = [&](std::uint64_t done, std::uint64_t total) {
          std::lock_guard lock(mu);
          if (done_kill || static_cast<double>(done) < fraction * static_cast<double>(total)) return;
          done_kill = true;
          BOOST_TEST_MESSAGE("  killing at " << done << " of " << total << " bytes; " << agents(f).size() << " agents");
          if (victim == Victim::session)
            for (pid_t p : sessions(f)) ::kill(p, SIGKILL);
          else if (victim == Victim::main_agent)
            ::kill(main_agent, SIGKILL);
          else
            for (pid_t p : agents(f)) ::kill(p, SIGKILL);
        };
        sync::SyncEngine engine(ep, sync::SyncTarget{local, "", "ferry-test", "~/project", {}, {}});
        auto s = engine.push(o);  // fails or reports errors: the link or its agent died under it
        cut = !s || !s->errors.empty();
        BOOST_TEST_MESSAGE("  cut push: " << (s ? s->one_line() + (s->errors.empty() ? std::string() : "; " + s->errors.front()) : s.error().message));
        fired += done_kill;
        ep.close();
      }
      BOOST_TEST(cut, where << ": the push was not cut");
      if (fs::exists(remote / name)) BOOST_TEST((read_file(remote / name) == content), where << ": the remote file is torn");
      converge(f, local, remote, name, "after " + where);
      fs::remove(local / name);  // the next point's file is the only big one in flight
    }
  }
  BOOST_TEST(fired == point, fired << " of " << point << " kill points were reached");
}

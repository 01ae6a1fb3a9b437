// Bulk lanes through the OpenSSH client (helper/remote/openssh_lane.hpp) over the real sshd: a
// big file pushed and pulled arrives byte-exact with its chunks on the lane (an `ssh` child of
// this process, gone with the link); a lane whose server shows another host key than the link
// saw is not used and records nothing; the lane's ssh killed mid-pull costs only its chunks;
// kill points in the middle of a push or pull over the lane (every session sshd, every agent,
// the lane's ssh) never leave a torn file, and the next sync converges.
#define BOOST_TEST_MODULE openssh_lanes
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
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
using ferry::test::random_bytes;
using ferry::test::read_file;
using ferry::test::write_file;

namespace {

constexpr std::size_t kBigBytes = (40u << 20) + 4321;  // five 8 MiB chunks and a tail

remote::SshEndpointOptions lane_options(const test::SshdFixture& f) {
  remote::SshEndpointOptions o = test::endpoint_options_for(f);
  o.session.connect_timeout = 5s;
  o.reconnect = false;
  o.openssh_lanes = 1;  // asked for: used whatever this loaded machine's loopback round trip reads
  return o;
}

sync::SyncOptions big_options() {
  sync::SyncOptions o;
  o.stream_above = 1u << 20;
  o.cpu_lanes_above = 1u << 20;  // the lane for these 40 MiB files too
  return o;
}

sync::SyncTarget target_of(const fs::path& local) { return sync::SyncTarget{local, "", "ferry-test", "~/project", {}, {}}; }

using test::comm_of;
using test::parent_of;
using test::live_children_named;

// The ferry-agent processes below the fixture's sshd.
std::vector<pid_t> agents(const test::SshdFixture& f) {
  std::vector<pid_t> out;
  for (pid_t p : test::process_tree(f.pid()))
    if (comm_of(p).starts_with("ferry-agent")) out.push_back(p);
  return out;
}

std::vector<pid_t> sessions(const test::SshdFixture& f) {
  std::vector<pid_t> out;
  for (pid_t p : test::process_tree(f.pid()))
    if (p != f.pid() && parent_of(p) == f.pid()) out.push_back(p);
  return out;
}

bool has_temp_files(const fs::path& root) {
  if (!fs::exists(root)) return false;
  for (auto& e : fs::recursive_directory_iterator(root))
    if (e.path().filename().string().starts_with(".ferry-tmp.")) return true;
  return false;
}

// A sync over a fresh link that must succeed without errors.
void converge(const test::SshdFixture& f, const fs::path& local, bool pull, const std::string& name, const std::string& when) {
  remote::SshEndpoint ep(lane_options(f));
  auto info = ep.connect(30s);
  BOOST_REQUIRE_MESSAGE(info.has_value(), when << ": connect: " << (info ? "" : info.error().message));
  {
    sync::SyncEngine engine(ep, target_of(local));
    auto s = pull ? engine.pull({name}, big_options()) : engine.push(big_options());
    BOOST_REQUIRE_MESSAGE(s.has_value(), when << ": " << (s ? "" : s.error().message));
    BOOST_TEST(s->errors.empty(), when << ": " << (s->errors.empty() ? "" : s->errors.front()));
    BOOST_TEST(s->conflicts.empty(), when);
  }
  ep.close();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_big_file_pushed_and_pulled_goes_through_the_openssh_lane_byte_exact) {
  std::mt19937_64 rng(31);
  test::SshdFixture f;
  f.trust_host_key();
  const fs::path local = f.dir() / "local", remote = f.home() / "project", back = f.dir() / "back";
  const std::string big = random_bytes<std::string>(rng, kBigBytes);
  write_file(local / "ckpt.bin", big);
  remote::SshEndpoint ep(lane_options(f));
  BOOST_REQUIRE(ep.connect(30s).has_value());
  BOOST_TEST(ep.lanes_save_cpu());
  {
    sync::SyncEngine engine(ep, target_of(local));
    auto s = engine.push(big_options());
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    BOOST_TEST(s->errors.empty(), (s->errors.empty() ? "" : s->errors.front()));
  }
  BOOST_TEST((read_file(remote / "ckpt.bin") == big));
  const std::uint64_t chunks = (kBigBytes + (8u << 20) - 1) / (8u << 20);
  // Every chunk went over the lane (the link only carried the placed appends).
  BOOST_TEST(ep.lane_calls() == chunks);
  BOOST_TEST(ep.live_lanes() == 1u);
  BOOST_TEST(live_children_named("ssh").size() == 1u);
  {
    sync::SyncEngine engine(ep, target_of(back));
    auto s = engine.pull({"ckpt.bin"}, big_options());
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    BOOST_TEST(s->errors.empty(), (s->errors.empty() ? "" : s->errors.front()));
    BOOST_TEST(s->files_sent == 1u);
  }
  BOOST_TEST((read_file(back / "ckpt.bin") == big));
  // The lane was up before the pull began: all its chunks came that way.
  BOOST_TEST(ep.lane_calls() == 2 * chunks);
  ep.close();
  BOOST_TEST(live_children_named("ssh").empty(), "the lane's ssh outlived the link");
  BOOST_TEST(!has_temp_files(remote));
  BOOST_TEST(!has_temp_files(back));
}

// A lane that only saves CPU costs a login: a file under cpu_lanes_above goes over the link, in
// both directions, and no ssh is started for it.
BOOST_AUTO_TEST_CASE(a_file_under_cpu_lanes_above_opens_no_openssh_lane) {
  std::mt19937_64 rng(37);
  test::SshdFixture f;
  f.trust_host_key();
  const fs::path local = f.dir() / "local", remote = f.home() / "project", back = f.dir() / "back";
  const std::string big = random_bytes<std::string>(rng, kBigBytes);
  write_file(local / "ckpt.bin", big);
  remote::SshEndpoint ep(lane_options(f));
  BOOST_REQUIRE(ep.connect(30s).has_value());
  sync::SyncOptions o = big_options();
  o.cpu_lanes_above = kBigBytes + 1;
  {
    sync::SyncEngine engine(ep, target_of(local));
    auto s = engine.push(o);
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    BOOST_TEST(s->errors.empty());
  }
  {
    sync::SyncEngine engine(ep, target_of(back));
    auto s = engine.pull({"ckpt.bin"}, o);
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    BOOST_TEST(s->files_sent == 1u);
  }
  BOOST_TEST((read_file(remote / "ckpt.bin") == big));
  BOOST_TEST((read_file(back / "ckpt.bin") == big));
  BOOST_TEST(ep.lane_calls() == 0u);
  BOOST_TEST(ep.live_lanes() == 0u);
  BOOST_TEST(live_children_named("ssh").empty());
  ep.close();
}

BOOST_AUTO_TEST_CASE(a_lane_shown_another_host_key_is_not_used_and_records_nothing) {
  std::mt19937_64 rng(37);
  test::SshdFixture f;
  f.trust_host_key();
  const fs::path local = f.dir() / "local", remote = f.home() / "project";
  const std::string big = random_bytes<std::string>(rng, kBigBytes);
  write_file(local / "ckpt.bin", big);
  remote::SshEndpoint ep(lane_options(f));
  BOOST_REQUIRE(ep.connect(30s).has_value());
  // The listener restarts with a new key; the link's own session (another process) lives on.
  ::kill(f.pid(), SIGTERM);
  ::waitpid(f.pid(), nullptr, 0);
  f.regenerate_host_key();
  f.start();
  const std::string known = read_file(f.known_hosts());
  {
    sync::SyncEngine engine(ep, target_of(local));
    auto s = engine.push(big_options());
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    BOOST_TEST(s->errors.empty(), (s->errors.empty() ? "" : s->errors.front()));
  }
  BOOST_TEST((read_file(remote / "ckpt.bin") == big));
  BOOST_TEST(ep.lane_calls() == 0u);  // every chunk over the link
  BOOST_TEST(ep.live_lanes() == 0u);
  BOOST_TEST(read_file(f.known_hosts()) == known);
  ep.close();
  BOOST_TEST(live_children_named("ssh").empty());
}

BOOST_AUTO_TEST_CASE(the_lanes_ssh_killed_mid_pull_costs_only_its_chunks) {
  std::mt19937_64 rng(41);
  test::SshdFixture f;
  f.trust_host_key();
  const fs::path local = f.dir() / "local", back = f.dir() / "back";
  const std::string big = random_bytes<std::string>(rng, (72u << 20) + 99);
  write_file(local / "ckpt.bin", big);
  converge(f, local, false, "", "the push");
  remote::SshEndpoint ep(lane_options(f));
  BOOST_REQUIRE(ep.connect(30s).has_value());
  // The lane up before the pull: the link starts no readers of its own, so after the kill the
  // lane's readers must carry the rest over the link themselves.
  BOOST_REQUIRE(ep.bulk_lanes() == 1u);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (ep.live_lanes() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);  // polling a condition, with a deadline
  BOOST_REQUIRE(ep.live_lanes() == 1u);
  std::mutex mu;
  bool killed = false;
  sync::SyncOptions o = big_options();
  o.progress = [&](std::uint64_t done, std::uint64_t total) {
    std::lock_guard lock(mu);
    if (killed || ep.lane_calls() == 0 || done >= total) return;
    for (pid_t p : live_children_named("ssh")) ::kill(p, SIGKILL);
    killed = true;
  };
  {
    sync::SyncEngine engine(ep, target_of(back));
    auto s = engine.pull({"ckpt.bin"}, o);
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    BOOST_TEST(s->errors.empty(), (s->errors.empty() ? "" : s->errors.front()));
    BOOST_TEST(s->unstable.empty());
  }
  BOOST_TEST(killed, "the lane never carried a chunk before the pull ended");
  BOOST_TEST(ep.live_lanes() == 0u);
  BOOST_TEST((read_file(back / "ckpt.bin") == big));
  ep.close();
  BOOST_TEST(!has_temp_files(back));
}

BOOST_AUTO_TEST_CASE(kill_points_over_the_openssh_lane_never_tear_a_file_and_the_next_sync_converges) {
  std::mt19937_64 rng(43);
  test::SshdFixture f;
  f.trust_host_key();
  const fs::path local = f.dir() / "local", remote = f.home() / "project", back = f.dir() / "back";
  write_file(local / "train.py", "print('hi')\n");
  converge(f, local, false, "", "first push");
  enum class Victim { sessions, agents, lane_ssh };
  int point = 0, fired = 0;
  for (bool pull : {false, true}) {
    for (Victim victim : {Victim::sessions, Victim::agents, Victim::lane_ssh}) {
      ++point;
      const std::string name = "ckpt-" + std::to_string(point) + ".bin";
      const std::string content = random_bytes<std::string>(rng, kBigBytes + (rng() % 4096));
      write_file(local / name, content);
      if (pull) converge(f, local, false, "", "pushing " + name);
      const std::string where = std::string(pull ? "pull" : "push") + " point " + std::to_string(point) + ": " +
                                (victim == Victim::sessions ? "every session sshd" : victim == Victim::agents ? "every agent" : "the lane's ssh") +
                                " killed mid-transfer";
      BOOST_TEST_MESSAGE(where);
      {
        remote::SshEndpoint ep(lane_options(f));
        BOOST_REQUIRE(ep.connect(30s).has_value());
        std::mutex mu;
        bool done_kill = false;
        sync::SyncOptions o = big_options();
        o.progress = [&](std::uint64_t done, std::uint64_t total) {
          std::lock_guard lock(mu);
          if (done_kill || ep.lane_calls() == 0 || done >= total) return;
          done_kill = true;
          if (victim == Victim::sessions)
            for (pid_t p : sessions(f)) ::kill(p, SIGKILL);
          else if (victim == Victim::agents)
            for (pid_t p : agents(f)) ::kill(p, SIGKILL);
          else
            for (pid_t p : live_children_named("ssh")) ::kill(p, SIGKILL);
        };
        sync::SyncEngine engine(ep, target_of(pull ? back : local));
        auto s = pull ? engine.pull({name}, o) : engine.push(o);
        BOOST_TEST_MESSAGE("  cut " << (pull ? "pull: " : "push: ")
                                    << (s ? s->one_line() + (s->errors.empty() ? std::string() : "; " + s->errors.front()) : s.error().message));
        fired += done_kill;
        ep.close();
      }
      const fs::path landed = pull ? back / name : remote / name;
      if (fs::exists(landed)) BOOST_TEST((read_file(landed) == content), where << ": the file is torn");
      converge(f, pull ? back : local, pull, name, "after " + where);
      BOOST_TEST((read_file(landed) == content), where << ": not converged");
      BOOST_TEST(!has_temp_files(pull ? back : remote), where << ": a temp file was left");
      if (!pull) fs::remove(local / name);  // the next point's file is the only big one in flight
    }
  }
  BOOST_TEST(fired == point, fired << " of " << point << " kill points were reached");
}

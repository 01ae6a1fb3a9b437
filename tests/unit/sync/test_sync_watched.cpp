// The watched no-op of a live engine (SyncEngine::watch_local_tree, as `ferry serve` uses it):
// with real inotify and the real agent, a no-op push reads nothing local, a save made right
// before a push and a new nested directory are pushed from the watcher's paths alone, and an
// overflow, an ignore-file change or a watcher error make the push walk the whole tree.
#define BOOST_TEST_MODULE sync_watched
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "helper/remote/local_endpoint.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/sync/watcher.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/sandbox_agent.hpp"

using namespace ferry::sync;
namespace fs = std::filesystem;
using ferry::remote::LocalEndpoint;
using ferry::remote::LocalEndpointOptions;
using ferry::test::read_file;
using ferry::test::TempDir;
using ferry::test::write_file;

namespace {

struct Fixture {
  TempDir t{"ferry-watched"};
  fs::path local = t / "local";
  fs::path sandbox = t / "sandbox";
  fs::path remote = sandbox / "proj";
  std::unique_ptr<LocalEndpoint> ep;
  std::unique_ptr<SyncEngine> engine;

  Fixture() {
    for (int i = 0; i < 300; ++i) write_file(local / fmt::format("pkg{}/m{}.py", i % 10, i), fmt::format("x = {}\n", i));
    write_file(local / "train.py", "import torch\n");
    ep = ferry::test::connect_sandbox_agent(FERRY_AGENT_PATH, sandbox);
    engine = std::make_unique<SyncEngine>(*ep, SyncTarget{local, "proj", "local", "~/proj", {}, {}});
    auto watching = engine->watch_local_tree();
    BOOST_REQUIRE_MESSAGE(watching.has_value(), (watching ? "" : watching.error().message));
    // The first push walks (nothing read since the watch began) and makes the promise.
    SyncSummary first = push();
    BOOST_REQUIRE(first.local_scan == "full");
    BOOST_REQUIRE(first.files_sent == 301u);
  }
  SyncSummary push(SyncOptions o = {}) {
    auto s = engine->push(o);
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    BOOST_REQUIRE_MESSAGE(s->errors.empty(), s->errors.front());
    return *s;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_no_op_push_reads_nothing_and_changes_nothing) {
  Fixture f;
  SyncSummary s = f.push();
  BOOST_TEST(s.local_scan == "none");
  BOOST_TEST(s.full_walk_reason == "");
  BOOST_TEST(s.files_sent == 0u);
  BOOST_TEST(s.files_deleted == 0u);
  BOOST_TEST(s.unchanged == 311u);  // 301 files + 10 dirs: planned from the whole remembered tree
  BOOST_TEST(read_file(f.remote / "pkg3/m13.py") == "x = 13\n");
  s = f.push();  // this one reuses the empty plan: still the whole tree counted, nothing sent
  BOOST_TEST(s.local_scan == "none");
  BOOST_TEST(s.unchanged == 311u);
  BOOST_TEST(s.files_sent == 0u);
  write_file(f.local / "pkg3/m13.py", "after the no-ops\n");
  s = f.push();
  BOOST_TEST(s.files_sent == 1u);
  BOOST_TEST(read_file(f.remote / "pkg3/m13.py") == "after the no-ops\n");
}

BOOST_AUTO_TEST_CASE(a_save_right_before_a_push_is_pushed) {
  Fixture f;
  for (int round = 0; round < 20; ++round) {
    // No delay between the write and the push: the event is queued before write() returns.
    const std::string content = fmt::format("y = {}\n", round);
    write_file(f.local / "pkg1/m1.py", content);
    SyncSummary s = f.push();
    BOOST_TEST(s.local_scan == "paths");
    BOOST_TEST(s.files_sent == 1u);
    BOOST_TEST(read_file(f.remote / "pkg1/m1.py") == content);
  }
  fs::remove(f.local / "pkg2/m2.py");
  SyncSummary s = f.push();
  BOOST_TEST(s.local_scan == "paths");
  BOOST_TEST(s.files_deleted == 1u);
  BOOST_TEST(!fs::exists(f.remote / "pkg2/m2.py"));
}

BOOST_AUTO_TEST_CASE(a_new_nested_directory_is_pushed) {
  Fixture f;
  write_file(f.local / "new/deeper/still/leaf.py", "leaf\n");
  write_file(f.local / "new/top.py", "top\n");
  SyncSummary s = f.push();
  BOOST_TEST(s.local_scan == "paths");
  BOOST_TEST(s.files_sent == 2u);
  BOOST_TEST(read_file(f.remote / "new/deeper/still/leaf.py") == "leaf\n");
  BOOST_TEST(read_file(f.remote / "new/top.py") == "top\n");
  // A directory removed with its files: they leave the remote too.
  fs::remove_all(f.local / "new/deeper");
  s = f.push();
  BOOST_TEST(s.local_scan == "paths");
  BOOST_TEST(!fs::exists(f.remote / "new/deeper"));
  BOOST_TEST(f.push().local_scan == "none");
}

BOOST_AUTO_TEST_CASE(an_overflow_forces_a_full_walk) {
  Fixture f;
  long max_queued = 16384;
  std::ifstream("/proc/sys/fs/inotify/max_queued_events") >> max_queued;
  BOOST_REQUIRE(max_queued > 0 && max_queued < 2'000'000);
  const fs::path a = f.local / "pkg0/m0.py", b = f.local / "pkg1/m1.py";
  // Alternating chmods are never merged into the previous event; the last two leave 0644.
  for (long i = 0; i < max_queued + 64; ++i)
    BOOST_REQUIRE(::chmod((i % 2 ? a : b).c_str(), i % 4 < 2 ? 0600 : 0644) == 0);
  BOOST_REQUIRE(::chmod(a.c_str(), 0644) == 0 && ::chmod(b.c_str(), 0644) == 0);
  write_file(f.local / "pkg5/m5.py", "changed in the overflow\n");
  SyncSummary s = f.push();
  BOOST_TEST(s.local_scan == "full");
  BOOST_TEST(s.full_walk_reason == "inotify queue overflow");
  BOOST_TEST(read_file(f.remote / "pkg5/m5.py") == "changed in the overflow\n");
  BOOST_TEST(f.push().local_scan == "none");  // the new watch began before the walk
}

BOOST_AUTO_TEST_CASE(an_ignore_file_change_forces_a_full_walk) {
  Fixture f;
  write_file(f.local / ".gitignore", "pkg9/\n");
  SyncSummary s = f.push();
  BOOST_TEST(s.local_scan == "full");
  BOOST_TEST(s.full_walk_reason.find(".gitignore") != std::string::npos);
  BOOST_TEST(read_file(f.remote / ".gitignore") == "pkg9/\n");
  // pkg9 is now ignored: a change there is not the sync's any more.
  write_file(f.local / "pkg9/m9.py", "ignored now\n");
  s = f.push();
  BOOST_TEST(s.files_sent == 0u);
  BOOST_TEST(read_file(f.remote / "pkg9/m9.py") == "x = 9\n");
  BOOST_TEST(s.local_scan == "none");  // the new watch does not watch pkg9 at all
}

BOOST_AUTO_TEST_CASE(after_a_watcher_error_the_push_still_works) {
  Fixture f;
  BOOST_REQUIRE(f.engine->watcher_for_test() != nullptr);
  f.engine->watcher_for_test()->fail_for_test("injected read failure");
  write_file(f.local / "pkg4/m4.py", "after the error\n");
  SyncSummary s = f.push();
  BOOST_TEST(s.local_scan == "full");
  BOOST_TEST(s.full_walk_reason.find("injected read failure") != std::string::npos);
  BOOST_TEST(read_file(f.remote / "pkg4/m4.py") == "after the error\n");
  // A new watch took over: the next change is seen from its paths, the no-op reads nothing.
  write_file(f.local / "pkg4/m14.py", "again\n");
  s = f.push();
  BOOST_TEST(s.local_scan == "paths");
  BOOST_TEST(read_file(f.remote / "pkg4/m14.py") == "again\n");
  BOOST_TEST(f.push().local_scan == "none");
}

BOOST_AUTO_TEST_CASE(force_and_mirror_pushes_keep_their_walk) {
  Fixture f;
  SyncOptions force;
  force.force = true;
  BOOST_TEST(f.push(force).local_scan == "full");
  SyncOptions mirror;
  mirror.deletes = DeleteMode::mirror;
  BOOST_TEST(f.push(mirror).local_scan == "full");
  BOOST_TEST(f.push().local_scan == "none");
}

// The no-op's cost against a walking engine's, on FERRY_WATCHED_FILES files (default 2000;
// the bench line in bench/results/sync.md used 100000 on /dev/shm via FERRY_WATCHED_DIR).
BOOST_AUTO_TEST_CASE(a_watched_no_op_costs_no_walk_at_any_size) {
  const char* n_env = std::getenv("FERRY_WATCHED_FILES");
  const char* dir_env = std::getenv("FERRY_WATCHED_DIR");
  const long n = n_env ? std::atol(n_env) : 2000;
  TempDir scratch{"ferry-watched-size"};
  const fs::path base = dir_env ? fs::path(dir_env) : scratch.path();
  const fs::path local = base / "local", sandbox = base / "sandbox";
  for (long i = 0; i < n; ++i) write_file(local / fmt::format("d{}/e{}/f{}.py", i % 100, i % 7, i), "x\n");
  LocalEndpointOptions o;
  o.agent = FERRY_AGENT_PATH;
  o.root = sandbox;
  LocalEndpoint ep(o);
  BOOST_REQUIRE(ep.connect().has_value());
  const SyncTarget target{local, "proj", "local", "~/proj", {}, {}};
  auto timed = [](SyncEngine& e) {
    auto s = e.push({});
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    BOOST_REQUIRE(s->files_sent == 0u);
    return *s;
  };
  {
    SyncEngine walking(ep, target);
    BOOST_REQUIRE(walking.push({}).has_value());
    SyncSummary s = timed(walking);
    BOOST_TEST(s.local_scan == "full");
    BOOST_TEST_MESSAGE(fmt::format("{} files: walking no-op {:.5f} s", n, s.seconds));
  }
  SyncEngine watched(ep, target);
  BOOST_REQUIRE(watched.watch_local_tree().has_value());
  BOOST_REQUIRE(watched.push({}).has_value());
  for (int i = 0; i < 3; ++i) {
    SyncSummary s = timed(watched);
    BOOST_TEST(s.local_scan == "none");
    BOOST_TEST_MESSAGE(fmt::format("{} files: watched no-op {:.5f} s", n, s.seconds));
  }
  if (dir_env) fs::remove_all(base);
}

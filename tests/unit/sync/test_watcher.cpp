// TreeWatcher against the real OS watch on a temp tree (inotify on Linux, ReadDirectoryChangesW
// under Wine): a save is reported, a new nested directory is watched and its files (made before
// the watch existed) reported, a rename names both sides and a directory moved away rescans,
// names are UTF-8, ignored directories are never watched (Linux) nor reported, a burst is one
// batch, a real kernel queue overflow becomes a rescan (Linux), and stop() wakes a waiting
// next(). Every wait is next() with a deadline, never a sleep.
#define BOOST_TEST_MODULE watcher
#include <boost/test/unit_test.hpp>

#ifndef _WIN32
#include <sys/stat.h>
#endif

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "helper/sync/watcher.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::sync;
using namespace std::chrono_literals;
using ferry::test::TempDir;
using ferry::test::write_file;
namespace fs = std::filesystem;

namespace {

constexpr auto kDeadline = 20s;

std::unique_ptr<TreeWatcher> watch(const fs::path& root, WatchOptions o = {}, std::vector<std::string> excludes = {}) {
  o.quiet = std::min(o.quiet, std::chrono::milliseconds(1000));
  auto w = TreeWatcher::open(root, std::move(excludes), o);
  BOOST_REQUIRE_MESSAGE(w.has_value(), (w ? "" : w.error()));
  return std::move(*w);
}

// The next batch, which must come before the deadline.
WatchBatch next_batch(TreeWatcher& w) {
  auto b = w.next(kDeadline);
  BOOST_REQUIRE_MESSAGE(b.has_value(), (b ? "" : b.error()));
  BOOST_REQUIRE_MESSAGE(b->has_value(), "no change reported within the deadline");
  return **b;
}

// Batches until one names `path` (a batch may end between two events of one operation).
std::vector<std::string> collect_until(TreeWatcher& w, const std::string& path) {
  std::vector<std::string> all;
  const auto give_up = std::chrono::steady_clock::now() + kDeadline;
  while (std::find(all.begin(), all.end(), path) == all.end()) {
    BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < give_up, "'" << path << "' never reported");
    auto b = next_batch(w);
    BOOST_REQUIRE(!b.rescan);
    all.insert(all.end(), b.paths.begin(), b.paths.end());
  }
  return all;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

BOOST_AUTO_TEST_CASE(a_save_is_reported) {
  TempDir t("ferry-watch");
  write_file(t / "train.py", "v1\n");
  auto w = watch(t.path());
  BOOST_TEST(w->watches(""));
  write_file(t / "train.py", "v2\n");
  auto b = next_batch(*w);
  BOOST_TEST(!b.rescan);
  BOOST_TEST((b.paths == std::vector<std::string>{"train.py"}));
  fs::remove(t / "train.py");
  BOOST_TEST(has(collect_until(*w, "train.py"), "train.py"));  // a delete is a change too
}

BOOST_AUTO_TEST_CASE(new_nested_directories_are_watched_with_the_files_made_before_their_watch) {
  TempDir t("ferry-watch");
  auto w = watch(t.path());
  // Created faster than the watcher can add watches: the deeper files exist before their
  // directory's watch does, so only the walk of the new directory can find them.
  write_file(t / "pkg/sub/deep/model.py", "m\n");
  write_file(t / "pkg/sub/util.py", "u\n");
  auto seen = collect_until(*w, "pkg/sub/deep/model.py");
  if (!has(seen, "pkg/sub/util.py")) {
    auto more = collect_until(*w, "pkg/sub/util.py");
    seen.insert(seen.end(), more.begin(), more.end());
  }
  BOOST_TEST(has(seen, "pkg"));
  BOOST_TEST(has(seen, "pkg/sub/deep"));
  BOOST_TEST(w->watches("pkg/sub/deep"));
  // The new watch itself works.
  write_file(t / "pkg/sub/deep/later.py", "l\n");
  BOOST_TEST(has(collect_until(*w, "pkg/sub/deep/later.py"), "pkg/sub/deep/later.py"));

  // A directory moved in from outside the tree: everything in it is new here.
  TempDir outside("ferry-watch-out");
  write_file(outside / "data/a.txt", "a\n");
  write_file(outside / "data/b/c.txt", "c\n");
  fs::rename(outside / "data", t / "data");
  auto moved = collect_until(*w, "data/b/c.txt");
  BOOST_TEST(has(moved, "data/a.txt"));
  BOOST_TEST(w->watches("data/b"));
}

BOOST_AUTO_TEST_CASE(a_rename_names_both_sides_and_a_directory_moved_away_is_a_rescan) {
  TempDir t("ferry-watch");
  write_file(t / "old.py", "o\n");
  write_file(t / "pkg/m.py", "m\n");
  auto w = watch(t.path());
  BOOST_TEST(w->watches("pkg"));
  fs::rename(t / "old.py", t / "new.py");
  auto seen = collect_until(*w, "new.py");
  if (!has(seen, "old.py")) seen = collect_until(*w, "old.py");
  BOOST_TEST(has(seen, "old.py"));

  // The files under a directory renamed within the tree left with it, unseen one by one.
  fs::rename(t / "pkg", t / "lib");
  auto b = next_batch(*w);
  BOOST_TEST(b.rescan);
  BOOST_TEST(b.reason == "directory 'pkg' moved away");
  BOOST_TEST(w->watches("lib"));
  BOOST_TEST(!w->watches("pkg"));
  // The rescan's new watch works.
  fs::remove(t / "lib/m.py");
  BOOST_TEST(has(collect_until(*w, "lib/m.py"), "lib/m.py"));
}

BOOST_AUTO_TEST_CASE(names_are_reported_as_utf8) {
  TempDir t("ferry-watch");
  auto w = watch(t.path());
  // Made from UTF-8 explicitly: MinGW's narrow path is not UTF-8.
  write_file(t / fs::path(std::u8string(u8"données/résumé.py")), "x\n");
  const std::string dir = "donn\xC3\xA9" "es", file = dir + "/r\xC3\xA9sum\xC3\xA9.py";
  auto seen = collect_until(*w, file);
  BOOST_TEST(has(seen, dir));
  BOOST_TEST(w->watches(dir));
}

BOOST_AUTO_TEST_CASE(ignored_directories_are_not_watched_and_ignored_paths_not_reported) {
  TempDir t("ferry-watch");
  write_file(t / ".gitignore", "node_modules/\n__pycache__/\n*.pyc\n");
  write_file(t / "node_modules/left-pad/index.js", "x\n");
  write_file(t / ".git/HEAD", "ref: refs/heads/main\n");
  write_file(t / "src/__pycache__/m.cpython-311.pyc", "x\n");
  write_file(t / "src/m.py", "x\n");
  auto w = watch(t.path(), {}, {"/outputs/"});
  BOOST_TEST(w->watches("src"));
  BOOST_TEST(!w->watches("node_modules"));
  BOOST_TEST(!w->watches("node_modules/left-pad"));
  BOOST_TEST(!w->watches(".git"));
  BOOST_TEST(!w->watches("src/__pycache__"));
  BOOST_TEST(w->watched_directories() == 2u);  // the root and src

  write_file(t / "node_modules/left-pad/index.js", "y\n");
  write_file(t / ".git/HEAD", "ref: refs/heads/dev\n");
  write_file(t / "src/__pycache__/m.cpython-311.pyc", "y\n");
  write_file(t / "src/n.pyc", "y\n");             // ignored by name in a watched directory
  write_file(t / "outputs/run1/log.txt", "y\n");  // ignored by the config's exclude
  write_file(t / "src/m.py", "y\n");              // the one change that counts, made last
  auto seen = collect_until(*w, "src/m.py");
  BOOST_TEST((seen == std::vector<std::string>{"src/m.py"}));
  BOOST_TEST(!w->watches("outputs"));
}

BOOST_AUTO_TEST_CASE(a_burst_is_one_batch) {
  TempDir t("ferry-watch");
  WatchOptions o;
  o.quiet = 1000ms;  // generous: a loaded 2-core machine must not split the burst
  o.max_delay = 30s;
  auto w = watch(t.path(), o);
  for (int i = 0; i < 50; ++i) {
    std::string name = "f";  // appended, not concatenated: GCC 12 -Wrestrict false positive
    name += std::to_string(i);
    write_file(t / name, "x\n");
  }
  auto b = next_batch(*w);
  BOOST_TEST(!b.rescan);
  BOOST_TEST(b.paths.size() == 50u);
}

#ifndef _WIN32
BOOST_AUTO_TEST_CASE(a_real_queue_overflow_becomes_a_rescan_that_sees_new_directories) {
  TempDir t("ferry-watch");
  write_file(t / "a.txt", "a\n");
  write_file(t / "b.txt", "b\n");
  auto w = watch(t.path());
  // More events than the kernel queues for one inotify instance, while the watcher is not
  // reading: alternating chmods are never merged into the previous event.
  long max_queued = 16384;
  std::ifstream("/proc/sys/fs/inotify/max_queued_events") >> max_queued;
  BOOST_REQUIRE(max_queued > 0 && max_queued < 2'000'000);
  for (long i = 0; i < max_queued + 64; ++i)
    BOOST_REQUIRE(::chmod((t / (i % 2 ? "a.txt" : "b.txt")).c_str(), i % 4 < 2 ? 0644 : 0600) == 0);
  fs::create_directories(t / "made/during/overflow");
  auto b = next_batch(*w);
  BOOST_TEST(b.rescan);
  BOOST_TEST(b.reason == "inotify queue overflow");
  BOOST_TEST(w->watches("made/during/overflow"));
  // Watching goes on with the new instance.
  write_file(t / "made/during/overflow/x.py", "x\n");
  BOOST_TEST(has(collect_until(*w, "made/during/overflow/x.py"), "made/during/overflow/x.py"));
}
#endif

BOOST_AUTO_TEST_CASE(rescan_rereads_the_ignore_rules) {
  TempDir t("ferry-watch");
  write_file(t / "cache/c.bin", "c\n");
  auto w = watch(t.path());
  BOOST_TEST(w->watches("cache"));
  write_file(t / ".ferryignore", "cache/\n");
  auto b = next_batch(*w);
  BOOST_TEST(b.rescan);  // an ignore file changed: what counts is only known after a new walk
  BOOST_TEST(!w->watches("cache"));
  auto direct = w->rescan("asked");
  BOOST_TEST(direct.rescan);
  BOOST_TEST(direct.reason == "asked");
  BOOST_TEST(w->watches(""));
}

namespace {

// The next batches until next() fails, which must come before the deadline.
std::string error_before_deadline(TreeWatcher& w) {
  const auto give_up = std::chrono::steady_clock::now() + kDeadline;
  for (;;) {
    BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < give_up, "the root's going was never reported");
    auto b = w.next(kDeadline);
    if (!b) return b.error();
    BOOST_REQUIRE(b->has_value());  // a.py's removal may come first
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_root_moved_away_is_an_error) {
  TempDir t("ferry-watch");
  write_file(t / "root/a.py", "a\n");
  auto w = watch(t / "root");
  fs::rename(t / "root", t / "moved");
  BOOST_TEST(error_before_deadline(*w).ends_with(" was deleted or moved"));
}

// (Wine keeps an open directory that is deleted until its handle is closed, and says nothing.)
#ifndef _WIN32
BOOST_AUTO_TEST_CASE(the_root_deleted_is_an_error) {
  TempDir t("ferry-watch");
  write_file(t / "root/a.py", "a\n");
  auto w = watch(t / "root");
  fs::remove_all(t / "root");
  BOOST_TEST(error_before_deadline(*w).ends_with(" was deleted or moved"));
}
#endif

BOOST_AUTO_TEST_CASE(stop_wakes_a_waiting_next) {
  TempDir t("ferry-watch");
  auto w = watch(t.path());
  std::thread stopper([&] { w->stop(); });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = w->next(60s);
  stopper.join();
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(!r->has_value());
  BOOST_TEST((std::chrono::steady_clock::now() - t0 < 30s));
}

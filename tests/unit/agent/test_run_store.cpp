// The run state dir: ids, timestamps, newest-first listing, atomic JSON files, and when a
// supervisor pid counts as alive.
#define BOOST_TEST_MODULE run_store
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "remote-runtime/agent/run/run_store.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::agent::run;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(run_ids_and_timestamps) {
  BOOST_TEST(valid_run_id("20261130-021011-3fa2"));
  for (const char* bad : {"", "20261130-021011-3fa", "20261130-021011-3FA2", "20261130_021011-3fa2", "../20261130-0210",
                          "2026113a-021011-3fa2", "20261130-021011-3fa2/.."})
    BOOST_TEST(!valid_run_id(bad), bad);
  std::chrono::system_clock::time_point t{std::chrono::milliseconds(1'795'996'211'123LL)};
  BOOST_TEST(iso_utc_ms(t) == "2026-11-29T23:50:11.123Z");
}

BOOST_AUTO_TEST_CASE(create_gives_fresh_sortable_ids_and_ids_lists_newest_first) {
  ferry::test::TempDir t("ferry-store");
  RunStore store(t.path() / "state");
  auto base = std::chrono::system_clock::time_point{std::chrono::seconds(1'795'996'211)};
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    auto run = store.create(base + std::chrono::seconds(i % 2));
    BOOST_REQUIRE(run.has_value());
    BOOST_TEST(valid_run_id(run->id));
    BOOST_TEST(seen.insert(run->id).second);
    BOOST_TEST(std::filesystem::is_directory(run->dir));
  }
  auto ids = store.ids();
  BOOST_REQUIRE(ids.size() == 20u);
  BOOST_TEST(ids.front().starts_with("20261129-235012"));
  BOOST_TEST(ids.back().starts_with("20261129-235011"));
  BOOST_TEST(std::is_sorted(ids.rbegin(), ids.rend()));
  BOOST_TEST(store.find(ids[3]).has_value());
  BOOST_TEST(!store.find("20200101-000000-0000").has_value());
  BOOST_TEST(!store.find("../../etc").has_value());
}

BOOST_AUTO_TEST_CASE(unended_ids_skip_runs_with_an_exit_record_and_anything_not_a_run_folder) {
  ferry::test::TempDir t("ferry-store");
  RunStore store(t.path() / "state");
  auto base = std::chrono::system_clock::time_point{std::chrono::seconds(1'795'996'211)};
  std::vector<RunFiles> runs;
  for (int i = 0; i < 4; ++i) runs.push_back(*store.create(base + std::chrono::seconds(i)));
  BOOST_REQUIRE(write_json_atomic(runs[0].exit(), json{{"exitCode", 0}}, 0600, Sync::none));
  BOOST_REQUIRE(write_json_atomic(runs[2].exit(), json{{"signal", 9}}, 0600, Sync::after_rename));
  BOOST_TEST(sync_file(runs[2].exit()));
  BOOST_TEST(!sync_file(runs[1].exit()));  // none there
  ferry::test::write_file(store.runs_dir() / "20261129-235019-abcd", "a file named like a run");
  ferry::test::write_file(store.runs_dir() / "notes.txt", "x");
  const std::vector<std::string> unended{runs[3].id, runs[1].id};
  BOOST_TEST(store.ids(/*unended_only=*/true) == unended, boost::test_tools::per_element());
  BOOST_TEST(store.ids().size() == 4u);
}

BOOST_AUTO_TEST_CASE(json_files_are_replaced_whole) {
  ferry::test::TempDir t("ferry-store");
  auto p = t.path() / "exit.json";
  BOOST_TEST(!read_json_file(p).has_value());
  BOOST_REQUIRE(write_json_atomic(p, json{{"exitCode", 3}}));
  BOOST_REQUIRE(write_json_atomic(p, json{{"signal", 15}}));
  BOOST_TEST(*read_json_file(p) == (json{{"signal", 15}}));
  BOOST_TEST(std::distance(std::filesystem::directory_iterator(t.path()), {}) == 1);  // no temp left
}

BOOST_AUTO_TEST_CASE(supervisor_alive_needs_a_live_supervisor_of_that_run) {
  BOOST_TEST(!supervisor_alive(0, "20261130-021011-3fa2"));
  // A live process that is not a supervisor (this test) does not count: pids get reused.
  BOOST_TEST(!supervisor_alive(::getpid(), "20261130-021011-3fa2"));
  // A zombie answers kill(pid, 0) but supervises nothing.
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  siginfo_t info{};
  BOOST_REQUIRE(::waitid(P_PID, child, &info, WEXITED | WNOWAIT) == 0);  // exited, not reaped
  BOOST_TEST(::kill(child, 0) == 0);
  BOOST_TEST(!supervisor_alive(child, "x"));
  ::waitpid(child, nullptr, 0);
}

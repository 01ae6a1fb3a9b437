// The remembered round trips: read back what was written, per host; the oldest go past the cap;
// a missing, corrupt or unwritable file reads as nothing remembered and loses nothing else.
#define BOOST_TEST_MODULE round_trip_memory
#include <filesystem>
#include <fstream>
#include <string>

#include <boost/test/unit_test.hpp>

#include "helper/remote/round_trip_memory.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

BOOST_AUTO_TEST_CASE(a_round_trip_reads_back_per_host) {
  test::TempDir d;
  const fs::path file = d.path() / "cache" / "ferry" / "round-trips.json";  // the directories are made
  BOOST_TEST(!remote::remembered_round_trip(file, "far root@gpu:22").has_value());
  BOOST_TEST(remote::remember_round_trip(file, "far root@gpu:22", 51234us));
  BOOST_TEST(remote::remember_round_trip(file, "near root@lan:22", 300us));
  BOOST_TEST(remote::remembered_round_trip(file, "far root@gpu:22").value().count() == 51234);
  BOOST_TEST(remote::remembered_round_trip(file, "near root@lan:22").value().count() == 300);
  BOOST_TEST(remote::remember_round_trip(file, "far root@gpu:22", 49000us));  // the latest wins
  BOOST_TEST(remote::remembered_round_trip(file, "far root@gpu:22").value().count() == 49000);
  BOOST_TEST(!remote::remembered_round_trip(file, "other root@gpu:22").has_value());
  for (const auto& e : fs::directory_iterator(file.parent_path()))  // no temp file left beside it
    BOOST_TEST(e.path().filename() == "round-trips.json");
  // Only its owner reads which hosts this user reaches.
  BOOST_TEST(((fs::status(file).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write)));
}

BOOST_AUTO_TEST_CASE(past_the_cap_the_oldest_go) {
  test::TempDir d;
  const fs::path file = d.path() / "rt.json";
  for (std::size_t i = 0; i <= remote::kMaxRememberedHosts; ++i)
    BOOST_TEST(remote::remember_round_trip(file, "host" + std::to_string(i), std::chrono::microseconds(1000 + i)));
  std::size_t kept = 0;
  for (std::size_t i = 0; i <= remote::kMaxRememberedHosts; ++i) kept += remote::remembered_round_trip(file, "host" + std::to_string(i)) ? 1 : 0;
  BOOST_TEST(kept == remote::kMaxRememberedHosts);
  BOOST_TEST(remote::remembered_round_trip(file, "host" + std::to_string(remote::kMaxRememberedHosts)).has_value());  // the newest stays
}

BOOST_AUTO_TEST_CASE(a_corrupt_or_foreign_file_reads_as_nothing_and_is_replaced) {
  test::TempDir d;
  const fs::path file = d.path() / "rt.json";
  for (const char* text : {"not json {", "[1,2]", R"({"hosts": 3})", R"({"hosts": {"h": {"rttUs": -5}}})", R"({"hosts": {"h": "x"}})"}) {
    std::ofstream(file, std::ios::trunc) << text;
    BOOST_TEST(!remote::remembered_round_trip(file, "h").has_value(), text);
  }
  BOOST_TEST(remote::remember_round_trip(file, "h", 20ms));
  BOOST_TEST(remote::remembered_round_trip(file, "h").value().count() == 20000);
}

BOOST_AUTO_TEST_CASE(an_unwritable_place_fails_and_changes_nothing) {
  test::TempDir d;
  const fs::path blocker = d.path() / "not-a-dir";
  std::ofstream(blocker) << "x";
  BOOST_TEST(!remote::remember_round_trip(blocker / "rt.json", "h", 20ms));  // its directory is a file
  BOOST_TEST(!remote::remember_round_trip(fs::path(), "h", 20ms));
  BOOST_TEST(!remote::remembered_round_trip(fs::path(), "h").has_value());
  std::ifstream in(blocker);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_TEST(content == "x");
}

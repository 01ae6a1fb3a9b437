// Scanner and hash index on real temp trees: kinds, modes, symlinks never followed, ignore
// pruning, the persisted hash cache (hits, racy entries, corrupt files), unstable files, and
// identical results with one or two threads. Under Wine (the Windows build) the cases that need
// POSIX modes, symlink targets or fifos stay POSIX-only; a linked directory is never walked on both.
#define BOOST_TEST_MODULE scanner
#include <boost/test/unit_test.hpp>

#ifndef _WIN32
#include <sys/stat.h>
#endif

#include <chrono>
#include <filesystem>
#include <fstream>

#include "helper/sync/atomic_file.hpp"
#include "helper/sync/file_index.hpp"
#include "helper/sync/scanner.hpp"
#include "tests/support/dir_link.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::sync;
namespace fs = std::filesystem;
using ferry::test::TempDir;
using ferry::test::write_file;

namespace {

// "f" + std::to_string(i) without GCC 12's -Wrestrict false positive.
std::string numbered(const char* prefix, int i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

ScanOptions threads(unsigned n) {
  ScanOptions o;
  o.threads = n;
  return o;
}

// Moves a file's mtime well into the past so its cached hash is trusted (not "racy").
void age(const fs::path& p, int seconds = 100) {
  fs::last_write_time(p, fs::last_write_time(p) - std::chrono::seconds(seconds));
}

Hash128 hash_of(const std::string& s) {
  return ferry::delta::hash128(ferry::delta::Bytes(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
}

}  // namespace

#ifndef _WIN32
BOOST_AUTO_TEST_CASE(records_kinds_modes_links_and_prunes_ignored) {
  TempDir t;
  const fs::path r = t.path() / "proj";
  write_file(r / "train.py", "print(1)\n");
  write_file(r / "run.sh", "#!/bin/sh\n");
  fs::permissions(r / "run.sh", fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  fs::create_directories(r / "empty");
  write_file(r / "build/out.o", "obj");
  write_file(r / "src/keep.log", "keep");
  write_file(r / "src/drop.log", "drop");
  write_file(r / ".gitignore", "build/\n*.log\n");
  write_file(r / "src/.gitignore", "!keep.log\n");
  write_file(r / ".git/HEAD", "ref");
  write_file(t.path() / "outside/secret.txt", "no");
  fs::create_symlink("train.py", r / "link_to_file");
  fs::create_symlink("../outside", r / "link_out");
  fs::create_symlink("missing-target", r / "dangling");
  ::mkfifo((r / "fifo").c_str(), 0600);

  const auto ignore = IgnoreMatcher::for_tree(r, {});
  auto res = scan_tree(r, ignore, nullptr);
  BOOST_REQUIRE(res.has_value());
  const TreeState& e = res->entries;
  std::vector<std::string> paths;
  for (const auto& kv : e) paths.push_back(kv.first);
  const std::vector<std::string> expected = {".gitignore", "dangling", "empty", "link_out", "link_to_file", "run.sh",
                                             "src", "src/.gitignore", "src/keep.log", "train.py"};
  BOOST_TEST(paths == expected, boost::test_tools::per_element());
  BOOST_TEST((e.at("empty").kind == EntryKind::dir));
  BOOST_TEST((e.at("link_out").kind == EntryKind::symlink));
  BOOST_TEST(e.at("link_out").link_target == "../outside");
  BOOST_TEST(e.at("dangling").link_target == "missing-target");
  BOOST_TEST(e.at("run.sh").mode == 0744u);
  BOOST_TEST(e.at("train.py").size == 9u);
  BOOST_TEST((e.at("train.py").hash == hash_of("print(1)\n")));
  BOOST_TEST(e.at("train.py").mtime_ns > 0);
  BOOST_REQUIRE(res->issues.size() == 1u);
  BOOST_TEST(res->issues[0].path == "fifo");
  BOOST_TEST(res->unstable.empty());
}

BOOST_AUTO_TEST_CASE(scan_paths_decides_single_saved_files) {
  TempDir t;
  const fs::path r = t.path() / "proj";
  write_file(r / "src/train.py", "print(2)\n");
  write_file(r / "build/out.o", "obj");
  write_file(r / "logs/keep/a.txt", "a");
  write_file(r / ".gitignore", "build/\nlogs/\n");
  write_file(t.path() / "outside/secret.txt", "no");
  fs::create_symlink("../outside", r / "src/out");
  fs::create_directories(r / "empty");
  const auto ignore = IgnoreMatcher::for_tree(r, {});
  auto res = scan_paths(r, ignore, nullptr,
                        {"src/train.py", "build/out.o", "logs/keep/a.txt", "gone.py", "src/out/secret.txt", "src/out",
                         "empty", "../proj/src/train.py", "/etc/passwd"});
  BOOST_REQUIRE(res.has_value());
  std::vector<std::string> paths;
  for (const auto& kv : res->entries) paths.push_back(kv.first);
  BOOST_TEST(paths == (std::vector<std::string>{"empty", "src/out", "src/train.py"}), boost::test_tools::per_element());
  BOOST_TEST((res->entries.at("src/train.py").hash == hash_of("print(2)\n")));
  BOOST_TEST((res->entries.at("src/out").kind == EntryKind::symlink));
}

#endif  // _WIN32

// POSIX records the link (its target goes to the box); Windows reports it (a link there has no
// POSIX target to give); neither walks into it.
BOOST_AUTO_TEST_CASE(a_linked_directory_is_never_walked) {
  TempDir t;
  const fs::path r = t.path() / "proj";
  write_file(r / "src/train.py", "print(3)\n");
  write_file(t.path() / "outside/secret.txt", "no");
  const ferry::test::DirLink link(t.path() / "outside", r / "src/out");
  const auto ignore = IgnoreMatcher::for_tree(r, {});
  for (const auto& res : {scan_tree(r, ignore, nullptr), scan_paths(r, ignore, nullptr, {"src/out/secret.txt", "src/out", "src/train.py"})}) {
    BOOST_REQUIRE(res.has_value());
    BOOST_TEST(!res->entries.contains("src/out/secret.txt"));
    BOOST_TEST(res->entries.contains("src/train.py"));
    const bool recorded = res->entries.contains("src/out") && res->entries.at("src/out").kind == EntryKind::symlink;
    const bool reported = res->issues.size() == 1u && res->issues[0].path == "src/out";
    BOOST_TEST((recorded || reported));
  }
}

BOOST_AUTO_TEST_CASE(index_skips_rehashing_unchanged_files_across_runs) {
  TempDir t;
  const fs::path r = t.path() / "proj";
  for (int i = 0; i < 50; ++i) write_file(r / (numbered("d", i % 5)) / (numbered("f", i)), std::string(100 + i, 'x'));
  write_file(r / "fresh.txt", "just written");
  for (auto& de : fs::recursive_directory_iterator(r)) {
    if (de.is_regular_file() && de.path().filename() != "fresh.txt") age(de.path());
  }
  // An mtime ahead of the clock stays inside the racy window however slow this machine is.
  age(r / "fresh.txt", -3600);
  const auto ignore = IgnoreMatcher::for_tree(r, {});
  const fs::path index_file = t.path() / "state/.ferry/index.bin";
  {
    auto index = FileIndex::load(index_file);
    BOOST_REQUIRE(index.has_value());
    BOOST_TEST(index->size() == 0u);
    auto res = scan_tree(r, ignore, &*index);
    BOOST_REQUIRE(res.has_value());
    BOOST_TEST(res->stats.hashed == 51u);
    BOOST_TEST(res->stats.hash_cache_hits == 0u);
    index->retain(res->entries);
    BOOST_REQUIRE(index->save(index_file).has_value());
  }
  auto index = FileIndex::load(index_file);
  BOOST_REQUIRE(index.has_value());
  BOOST_TEST(index->size() == 51u);
  auto second = scan_tree(r, ignore, &*index);
  BOOST_REQUIRE(second.has_value());
  // The fresh file's hash is "racy" (taken within the mtime tick window): hashed again.
  BOOST_TEST(second->stats.hash_cache_hits == 50u);
  BOOST_TEST(second->stats.hashed == 1u);

  write_file(r / "d1/f1", std::string(101, 'y'));  // same size, new content and mtime
  age(r / "d1/f1", 50);
  auto third = scan_tree(r, ignore, &*index);
  BOOST_REQUIRE(third.has_value());
  BOOST_TEST(third->stats.hashed == 2u);
  BOOST_TEST((third->entries.at("d1/f1").hash == hash_of(std::string(101, 'y'))));

  // retain: nothing stale keeps every entry; a deleted file's entry goes, the others stay.
  index->retain(third->entries);
  BOOST_TEST(index->size() == 51u);
  BOOST_REQUIRE(fs::remove(r / "d2/f2"));
  auto fourth = scan_tree(r, ignore, &*index);
  BOOST_REQUIRE(fourth.has_value());
  index->retain(fourth->entries);
  BOOST_TEST(index->size() == 50u);
  BOOST_TEST(scan_tree(r, ignore, &*index)->stats.hash_cache_hits == 49u);  // all but fresh.txt
}

BOOST_AUTO_TEST_CASE(corrupt_or_foreign_index_files_are_errors) {
  TempDir t;
  BOOST_REQUIRE(write_file_atomically(t.path() / "bad.bin", "FIDX\x02\0\0\0").has_value());
  BOOST_TEST(!FileIndex::load(t.path() / "bad.bin").has_value());
  BOOST_REQUIRE(write_file_atomically(t.path() / "trunc.bin", std::string("FIDX\x01\0\0\0\x05\0\0\0", 12)).has_value());
  BOOST_TEST(!FileIndex::load(t.path() / "trunc.bin").has_value());
  BOOST_REQUIRE(write_file_atomically(t.path() / "other.bin", "hello").has_value());
  BOOST_TEST(!FileIndex::load(t.path() / "other.bin").has_value());
}

#ifndef _WIN32
// ferry's own state is 0600; a project file (ferry.json, IDE files) keeps its mode, or is 0644 new.
BOOST_AUTO_TEST_CASE(atomic_writes_give_state_0600_and_project_files_their_own_mode) {
  TempDir t;
  auto mode = [](const fs::path& f) { return fs::status(f).permissions() & fs::perms::mask; };
  BOOST_REQUIRE(write_file_atomically(t.path() / "state.bin", "s").has_value());
  BOOST_TEST((mode(t.path() / "state.bin") == (fs::perms::owner_read | fs::perms::owner_write)));
  BOOST_REQUIRE(write_project_file_atomically(t.path() / "new.json", "{}").has_value());
  BOOST_TEST((mode(t.path() / "new.json") ==
              (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read)));
  fs::permissions(t.path() / "new.json", fs::perms::owner_all | fs::perms::group_read);
  BOOST_REQUIRE(write_project_file_atomically(t.path() / "new.json", "{\"a\": 1}").has_value());
  BOOST_TEST((mode(t.path() / "new.json") == (fs::perms::owner_all | fs::perms::group_read)));
  BOOST_TEST(ferry::test::read_file(t.path() / "new.json") == "{\"a\": 1}");
}

#endif  // _WIN32

BOOST_AUTO_TEST_CASE(file_changing_while_hashed_is_unstable) {
  TempDir t;
  const fs::path r = t.path() / "proj";
  write_file(r / "growing.log", std::string(1000, 'a'));
  write_file(r / "steady.txt", "ok");
  const auto ignore = IgnoreMatcher::for_tree(r, {});
  ScanOptions opt;
  opt.after_read_hook = [&](const std::string& rel) {
    if (rel == "growing.log") std::ofstream(r / rel, std::ios::app) << "more";
  };
  auto res = scan_tree(r, ignore, nullptr, opt);
  BOOST_REQUIRE(res.has_value());
  BOOST_TEST(res->unstable == std::vector<std::string>{"growing.log"});
  BOOST_TEST(!res->entries.contains("growing.log"));
  BOOST_TEST(res->entries.contains("steady.txt"));
}

BOOST_AUTO_TEST_CASE(parallel_scan_matches_single_threaded) {
  TempDir t;
  const fs::path r = t.path() / "proj";
  for (int i = 0; i < 1500; ++i) {
    write_file(r / (numbered("a", i % 7)) / (numbered("b", i % 13)) / (numbered("f", i)),
          std::string(static_cast<std::size_t>(i * 37 % 70000), static_cast<char>('a' + i % 26)));
  }
  const auto ignore = IgnoreMatcher::for_tree(r, {});
  auto one = scan_tree(r, ignore, nullptr, threads(1));
  auto two = scan_tree(r, ignore, nullptr, threads(2));
  auto four = scan_tree(r, ignore, nullptr, threads(4));
  BOOST_REQUIRE(one.has_value() && two.has_value() && four.has_value());
  BOOST_TEST(one->entries.size() == 1500u + 7u + 7u * 13u);
  BOOST_TEST((one->entries == two->entries));
  BOOST_TEST((one->entries == four->entries));
}

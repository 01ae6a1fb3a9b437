// A full push hashes new files while reading them for sending instead of in the walk: the
// manifest and the index must come out exactly as if the walk had hashed them, a file changed
// between the walk and the send is left for the next sync, and files the remote already has
// (untracked) are still hashed before the plan (adopted when equal, conflicts when not).
#define BOOST_TEST_MODULE sync_lazy_hash
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <random>
#include <set>
#include <string>

#include "helper/remote/local_endpoint.hpp"
#include "helper/sync/file_index.hpp"
#include "helper/sync/manifest.hpp"
#include "helper/sync/scanner.hpp"
#include "helper/sync/sync_engine.hpp"
#include "protocol/delta/delta_types.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/sandbox_agent.hpp"

using namespace ferry::sync;
namespace fs = std::filesystem;
using ferry::test::TempDir;
using ferry::test::write_file;
using ferry::test::read_bytes;

namespace {

std::string numbered(const std::string& stem, int i) {
  std::string s = stem;  // appended: gcc 12's -Wrestrict false positive on literal + std::string
  return s.append(std::to_string(i)).append(".txt");
}

struct Fixture {
  TempDir t;
  fs::path local = t.path() / "local";
  fs::path sandbox = t.path() / "sandbox";
  fs::path remote = sandbox / "proj";
  std::unique_ptr<ferry::remote::LocalEndpoint> ep;

  Fixture() {
    fs::create_directories(local);
    ep = ferry::test::connect_sandbox_agent(FERRY_AGENT_PATH, sandbox);
  }
  SyncTarget target() const { return SyncTarget{local, "proj", "local", "~/proj", {}, {}}; }
  SyncSummary push(SyncOptions o = {}) {
    SyncEngine engine(*ep, target());
    auto s = engine.push(o);
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    return *s;
  }
  Manifest manifest() const {
    auto m = load_manifest(default_manifest_path(local, "local", "~/proj"));
    BOOST_REQUIRE(m.has_value());
    return *m;
  }
};

// Every file of the manifest carries the hash of the bytes on the remote and the local stat.
void require_manifest_matches(const Fixture& f) {
  const Manifest m = f.manifest();
  std::size_t files = 0;
  for (const auto& [p, meta] : m.entries) {
    if (meta.kind != EntryKind::file) continue;
    ++files;
    BOOST_TEST_CONTEXT(p) {
      BOOST_REQUIRE(meta.hash.has_value());
      BOOST_TEST((*meta.hash == ferry::delta::hash128(read_bytes(f.remote / p))));
      BOOST_TEST((*meta.hash == ferry::delta::hash128(read_bytes(f.local / p))));
      BOOST_TEST(meta.size == fs::file_size(f.local / p));
    }
  }
  BOOST_TEST(files > 0u);
}

}  // namespace

BOOST_AUTO_TEST_CASE(new_files_hashed_while_sent_give_the_same_manifest_and_index) {
  Fixture f;
  for (int i = 0; i < 600; ++i) write_file(f.local / numbered("src/f", i), std::string(static_cast<std::size_t>(i * 7), 'a' + i % 26));
  SyncSummary s = f.push();
  BOOST_TEST(s.errors.empty());
  BOOST_TEST(s.unstable.empty());
  BOOST_TEST(s.files_sent == 600u);
  require_manifest_matches(f);

  // The index holds every file's hash, so the next cold push hashes nothing it already sent.
  auto index = FileIndex::load(default_index_path(f.local));
  BOOST_REQUIRE(index.has_value());
  BOOST_TEST(index->size() == 600u);
  auto walk = scan_tree(f.local, IgnoreMatcher::for_tree(f.local, {}), &*index);
  BOOST_REQUIRE(walk.has_value());
  // Files hashed within 2 s of their mtime are re-hashed on purpose (racy window); the rest hit.
  BOOST_TEST(walk->stats.hash_cache_hits + walk->stats.hashed == 600u);
  for (const auto& [p, meta] : walk->entries)
    if (meta.kind == EntryKind::file)
      BOOST_TEST((meta.hash == f.manifest().entries.at(p).hash), p);
  BOOST_TEST(f.push().files_sent == 0u);
}

BOOST_AUTO_TEST_CASE(a_file_changed_between_walk_and_send_is_left_for_the_next_sync) {
  Fixture f;
  for (int i = 0; i < 50; ++i) write_file(f.local / numbered("f", i), "first version " + std::to_string(i));
  SyncOptions o;
  o.before_transfer = [&] {
    write_file(f.local / "f3.txt", std::string("rewritten, longer than before"));   // size differs
    struct stat st {};
    ::stat((f.local / "f4.txt").c_str(), &st);
    write_file(f.local / "f4.txt", std::string("same size ....."));  // as many bytes as before
    const timespec later[2] = {st.st_atim, {st.st_mtim.tv_sec + 1, st.st_mtim.tv_nsec}};  // an edit's new mtime
    ::utimensat(AT_FDCWD, (f.local / "f4.txt").c_str(), later, 0);
    ::stat((f.local / "f5.txt").c_str(), &st);
    write_file(f.local / "f5.txt", std::string("SAME SIZE ....."));
    const timespec keep[2] = {st.st_atim, st.st_mtim};  // mtime put back: only ctime tells
    ::utimensat(AT_FDCWD, (f.local / "f5.txt").c_str(), keep, 0);
  };
  SyncSummary s = f.push(o);
  BOOST_TEST(s.errors.empty());
  const std::set<std::string> unstable(s.unstable.begin(), s.unstable.end());
  BOOST_TEST(unstable.count("f3.txt") == 1u);
  BOOST_TEST(unstable.count("f4.txt") == 1u);
  // f5's size and mtime are what the walk saw: the walk kept no ctime, so it goes as read now,
  // with the hash of what was sent (the manifest never claims bytes the remote does not have).
  const Manifest m = f.manifest();
  BOOST_TEST(!m.entries.contains("f3.txt"));
  BOOST_TEST(!m.entries.contains("f4.txt"));
  BOOST_TEST(!fs::exists(f.remote / "f3.txt"));
  for (const auto& [p, meta] : m.entries)
    if (meta.kind == EntryKind::file) BOOST_TEST((*meta.hash == ferry::delta::hash128(read_bytes(f.remote / p))), p);

  SyncSummary s2 = f.push();
  BOOST_TEST(s2.errors.empty());
  BOOST_TEST(s2.unstable.empty());
  BOOST_TEST(ferry::test::read_file(f.remote / "f3.txt") == "rewritten, longer than before");
  BOOST_TEST(ferry::test::read_file(f.remote / "f4.txt") == "same size .....");
  require_manifest_matches(f);
}

BOOST_AUTO_TEST_CASE(files_already_on_the_remote_are_hashed_before_the_plan) {
  Fixture f;
  write_file(f.local / "same.txt", std::string("identical on both sides"));
  write_file(f.local / "differs.txt", std::string("local text"));
  write_file(f.local / "new.txt", std::string("only here"));
  // Put there by something other than ferry (rsync, a previous tool): no manifest knows them.
  write_file(f.remote / "same.txt", std::string("identical on both sides"));
  write_file(f.remote / "differs.txt", std::string("remote text"));
  SyncSummary s = f.push();
  BOOST_TEST(s.errors.empty());
  BOOST_REQUIRE(s.conflicts.size() == 1u);
  BOOST_TEST(s.conflicts[0].path == "differs.txt");
  BOOST_TEST(s.files_sent == 1u);  // new.txt; same.txt adopted, differs.txt left alone
  BOOST_TEST(ferry::test::read_file(f.remote / "differs.txt") == "remote text");
  const Manifest m = f.manifest();
  BOOST_REQUIRE(m.entries.contains("same.txt"));
  BOOST_TEST((*m.entries.at("same.txt").hash == ferry::delta::hash128(read_bytes(f.local / "same.txt"))));
  BOOST_TEST(!m.entries.contains("differs.txt"));
}

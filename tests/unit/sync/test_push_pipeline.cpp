// PushPipeline on its own, against the real ferry-agent over LocalEndpoint: whole files in a
// batch with one that vanished (unstable) and one the remote changed (a conflict, left alone),
// a file streamed in chunks, deletes only of files still as expected, what the manifest
// records, how many requests changed the remote, and the progress it reports.
#define BOOST_TEST_MODULE push_pipeline
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <mutex>

#include "helper/remote/local_endpoint.hpp"
#include "helper/sync/push_pipeline.hpp"
#include "helper/sync/scanner.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/sandbox_agent.hpp"

using namespace ferry::sync;
namespace fs = std::filesystem;
using ferry::remote::LocalEndpoint;
using ferry::remote::LocalEndpointOptions;
using ferry::test::random_bytes;
using ferry::test::read_bytes;
using ferry::test::TempDir;
using ferry::test::write_file;
using Buf = std::vector<std::uint8_t>;

namespace {

Buf text(const std::string& s) { return Buf(s.begin(), s.end()); }

// A project, a sandbox agent, and what a pipeline needs around it; the mapping is <sandbox>/proj.
struct Fixture {
  TempDir t;
  fs::path local = t.path() / "local";
  fs::path sandbox = t.path() / "sandbox";
  fs::path remote_dir = sandbox / "proj";
  std::unique_ptr<LocalEndpoint> ep;
  std::unique_ptr<SyncClient> client;  // as the engine has: one per endpoint
  TreeState local_tree, remote_tree;
  Manifest plan_manifest, manifest;
  FileIndex index;
  SyncSummary summary;
  SyncOptions options;

  Fixture() {
    fs::create_directories(local);
    fs::create_directories(remote_dir);
    ep = ferry::test::connect_sandbox_agent(FERRY_AGENT_PATH, sandbox);
    client = std::make_unique<SyncClient>(*ep);
  }
  void scan_local() {
    auto r = scan_tree(local, IgnoreMatcher::for_tree(local, {}), nullptr);
    BOOST_REQUIRE(r.has_value());
    local_tree = r->entries;
  }
  std::unique_ptr<PushPipeline> pipeline(std::uint64_t total = 0) {
    return std::make_unique<PushPipeline>(PushPipeline::Context{*client, local, "proj", "~/proj", local_tree, remote_tree, plan_manifest,
                                                                manifest, index, summary, options, PlanOptions{}.delta_min_size},
                                          total);
  }
  Transfer transfer(const std::string& path) { return Transfer{path, local_tree.at(path), std::nullopt}; }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_batch_sends_what_is_there_and_collects_the_rest) {
  Fixture f;
  write_file(f.local / "a.txt", text("alpha\n"));
  write_file(f.local / "sub/b.txt", text("beta\n"));
  write_file(f.local / "gone.txt", text("deleted before the send\n"));
  write_file(f.local / "theirs.txt", text("ours\n"));
  f.scan_local();
  fs::remove(f.local / "gone.txt");
  // Written on the box behind ferry's back: the plan expected no file there.
  write_file(f.remote_dir / "theirs.txt", text("someone else's\n"));
  std::mutex mu;
  std::uint64_t last_done = 0, last_total = 0;
  f.options.progress = [&](std::uint64_t done, std::uint64_t total) {
    std::lock_guard lock(mu);
    last_done = done, last_total = total;
  };
  const std::vector<Transfer> whole{f.transfer("a.txt"), f.transfer("gone.txt"), f.transfer("sub/b.txt"), f.transfer("theirs.txt")};
  auto p = f.pipeline(123);
  p->queue_whole(whole);
  p->run();

  BOOST_TEST(p->mutations() == 1u);  // one sync/writeBatch
  BOOST_TEST(f.summary.files_sent == 2u);
  BOOST_TEST(f.summary.errors.empty());
  BOOST_TEST(f.summary.unstable == std::vector<std::string>{"gone.txt"});
  BOOST_REQUIRE_EQUAL(f.summary.conflicts.size(), 1u);
  BOOST_TEST(f.summary.conflicts[0].path == "theirs.txt");
  BOOST_TEST((f.summary.conflicts[0].kind == ConflictKind::changed_remotely));
  BOOST_TEST(read_bytes(f.remote_dir / "a.txt") == text("alpha\n"));
  BOOST_TEST(read_bytes(f.remote_dir / "sub/b.txt") == text("beta\n"));
  BOOST_TEST(read_bytes(f.remote_dir / "theirs.txt") == text("someone else's\n"));
  BOOST_TEST(!fs::exists(f.remote_dir / "gone.txt"));
  BOOST_TEST(f.manifest.entries.contains("a.txt"));
  BOOST_TEST(f.manifest.entries.contains("sub/b.txt"));
  BOOST_TEST(!f.manifest.entries.contains("theirs.txt"));
  BOOST_TEST(!f.manifest.entries.contains("gone.txt"));
  BOOST_TEST(f.summary.bytes_literal == 11u);
  BOOST_TEST(f.summary.bytes_on_wire > 0u);
  BOOST_TEST(last_total == 123u);
  BOOST_TEST(last_done == 6u + 5u + 5u);  // read and sent, whatever the agent answered
}

BOOST_AUTO_TEST_CASE(a_file_over_stream_above_goes_in_chunks_and_commits) {
  Fixture f;
  const Buf big = random_bytes(20u << 20, 7);  // three 8 MiB chunks
  write_file(f.local / "big.bin", big);
  write_file(f.local / "small.txt", text("small\n"));
  f.scan_local();
  f.options.stream_above = 1u << 20;
  const std::vector<Transfer> whole{f.transfer("big.bin"), f.transfer("small.txt")};
  auto p = f.pipeline();
  p->queue_whole(whole);
  p->run();
  BOOST_TEST(f.summary.errors.empty());
  BOOST_TEST(f.summary.files_sent == 2u);
  BOOST_TEST(p->mutations() == 2u);  // sync/fileCommit and one sync/writeBatch
  BOOST_TEST((read_bytes(f.remote_dir / "big.bin") == big));
  BOOST_TEST(f.manifest.entries.contains("big.bin"));
  BOOST_TEST(f.summary.bytes_literal == big.size() + 6u);
}

BOOST_AUTO_TEST_CASE(deletes_take_only_files_still_as_expected) {
  Fixture f;
  write_file(f.remote_dir / "old.txt", text("ferry wrote this\n"));
  write_file(f.remote_dir / "changed.txt", text("ferry wrote this too\n"));
  write_file(f.remote_dir / "olddir/x", text("x\n"));
  fs::remove(f.remote_dir / "olddir/x");
  auto r = scan_tree(f.remote_dir, IgnoreMatcher::for_tree(f.remote_dir, {}), nullptr);
  BOOST_REQUIRE(r.has_value());
  f.remote_tree = r->entries;
  f.remote_tree.at("changed.txt").size += 1;  // the plan saw another version than is there now
  f.manifest.record("old.txt", f.remote_tree.at("old.txt"));
  f.manifest.record("changed.txt", f.remote_tree.at("changed.txt"));
  auto p = f.pipeline();
  p->run();  // nothing queued: deletes wait for the transfers, never run with them
  p->delete_stale({"changed.txt", "old.txt"}, {"olddir"});
  BOOST_TEST(p->mutations() == 1u);
  BOOST_TEST(!fs::exists(f.remote_dir / "old.txt"));
  BOOST_TEST(!fs::exists(f.remote_dir / "olddir"));
  BOOST_TEST(fs::exists(f.remote_dir / "changed.txt"));
  BOOST_TEST(f.summary.files_deleted == 1u);
  BOOST_REQUIRE_EQUAL(f.summary.conflicts.size(), 1u);
  BOOST_TEST(f.summary.conflicts[0].path == "changed.txt");
  BOOST_TEST(!f.manifest.entries.contains("old.txt"));
  BOOST_TEST(f.manifest.entries.contains("changed.txt"));
}

BOOST_AUTO_TEST_CASE(a_cancelled_push_deletes_nothing) {
  Fixture f;
  write_file(f.remote_dir / "old.txt", text("ferry wrote this\n"));
  auto r = scan_tree(f.remote_dir, IgnoreMatcher::for_tree(f.remote_dir, {}), nullptr);
  BOOST_REQUIRE(r.has_value());
  f.remote_tree = r->entries;
  f.options.cancelled = [] { return true; };
  auto p = f.pipeline();
  p->delete_stale({"old.txt"}, {});
  BOOST_TEST(p->cancelled());
  BOOST_TEST(p->mutations() == 0u);
  BOOST_TEST(fs::exists(f.remote_dir / "old.txt"));
  BOOST_TEST(f.summary.files_deleted == 0u);
}

// The push fast path: with the agent's sync generation unchanged since the manifest was last
// complete, a push plans against the manifest and lists nothing (a no-op is one sync/state);
// files changed behind ferry's back are still conflicts (the agent checks what each write and
// delete expects); another writer, a wiped remote or a stale persisted manifest make the next
// push list the remote again. Every test counts the requests that reach the real agent.
#define BOOST_TEST_MODULE sync_fast_path
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include <fmt/format.h>

#include "helper/remote/local_endpoint.hpp"
#include "helper/sync/manifest.hpp"
#include "helper/sync/scanner.hpp"
#include "helper/sync/sync_engine.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/sandbox_agent.hpp"

using namespace ferry::sync;
namespace fs = std::filesystem;
using ferry::test::TempDir;
using ferry::test::read_file;
using ferry::test::write_file;
using ferry::remote::LocalEndpoint;
using ferry::remote::LocalEndpointOptions;
using json = nlohmann::json;

namespace {

// Forwards to the real endpoint and counts requests (and their CBOR size) per method.
class CountingEndpoint : public ferry::remote::Endpoint {
 public:
  explicit CountingEndpoint(ferry::remote::Endpoint& inner) : inner_(inner) {}
  std::expected<ferry::remote::AgentInfo, ferry::remote::ResponseError> connect(std::chrono::milliseconds t) override {
    return inner_.connect(t);
  }
  std::expected<json, ferry::remote::ResponseError> call(std::string_view method, json params,
                                                          std::chrono::milliseconds timeout) override {
    {
      std::lock_guard lock(mu_);
      ++calls_[std::string(method)];
      bytes_ += json::to_cbor(params).size();
    }
    if (before_call) before_call(method);
    return inner_.call(method, std::move(params), timeout);
  }
  std::expected<void, ferry::remote::ResponseError> notify(std::string_view method, json params) override {
    return inner_.notify(method, std::move(params));
  }
  [[nodiscard]] ferry::remote::Subscription subscribe(ferry::remote::NotificationHandler h) override { return inner_.subscribe(std::move(h)); }
  const ferry::remote::AgentInfo& info() const override { return inner_.info(); }
  bool connected() const override { return inner_.connected(); }
  void close() override { inner_.close(); }
  std::string description() const override { return "counting " + inner_.description(); }

  std::function<void(std::string_view method)> before_call;

  std::map<std::string, int> take() {
    std::lock_guard lock(mu_);
    auto out = std::move(calls_);
    calls_.clear();
    bytes_ = 0;
    return out;
  }
  std::size_t bytes() {
    std::lock_guard lock(mu_);
    return bytes_;
  }

 private:
  ferry::remote::Endpoint& inner_;
  std::mutex mu_;
  std::map<std::string, int> calls_;
  std::size_t bytes_ = 0;
};

struct Fixture {
  TempDir t;
  fs::path local = t.path() / "local";
  fs::path sandbox = t.path() / "sandbox";
  fs::path remote = sandbox / "proj";
  std::unique_ptr<LocalEndpoint> real;
  std::unique_ptr<CountingEndpoint> ep;

  Fixture() {
    fs::create_directories(local);
    real = ferry::test::connect_sandbox_agent(FERRY_AGENT_PATH, sandbox);
    ep = std::make_unique<CountingEndpoint>(*real);
  }
  std::unique_ptr<SyncEngine> engine(const fs::path& root) {
    return std::make_unique<SyncEngine>(*ep, SyncTarget{root, "proj", "local", "~/proj", {}, {}});
  }
  SyncSummary push(SyncEngine& e, SyncOptions o = {}) {
    auto s = e.push(o);
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    for (const auto& x : s->errors) BOOST_TEST_MESSAGE("sync error: " << x);
    return *s;
  }
  SyncSummary push_fresh(SyncOptions o = {}) { return push(*engine(local), o); }
};

void make_tree(const fs::path& root, int files) {
  for (int i = 0; i < files; ++i) write_file(root / fmt::format("pkg{}/m{}.py", i % 10, i), fmt::format("x = {}\n", i));
  write_file(root / "train.py", "import torch\n");
  fs::create_directories(root / "empty");
  fs::create_symlink("train.py", root / "main.py");
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_no_op_push_lists_nothing_whatever_the_tree_size) {
  Fixture f;
  make_tree(f.local, 2000);
  auto e = f.engine(f.local);
  SyncSummary s1 = f.push(*e);
  BOOST_TEST(s1.files_sent >= 2000u);
  f.ep->take();

  // The same engine (manifest in memory) and a fresh one (manifest from disk): one request each.
  SyncSummary s2 = f.push(*e);
  BOOST_TEST(s2.files_sent == 0u);
  BOOST_TEST(s2.unchanged >= 2000u);
  auto calls = f.ep->take();
  BOOST_TEST(calls.size() == 1u);
  BOOST_TEST(calls["sync/state"] == 1);
  e.reset();  // persists
  SyncSummary s3 = f.push_fresh();
  BOOST_TEST(s3.files_sent == 0u);
  BOOST_TEST(s3.conflicts.empty());
  const std::size_t wire = f.ep->bytes();
  calls = f.ep->take();
  BOOST_TEST(calls.size() == 1u);
  BOOST_TEST(calls["sync/state"] == 1);
  BOOST_TEST(wire < 64u);  // tiny, not a per-file listing

  // A change still goes, and the push after it is a no-op again without a listing.
  write_file(f.local / "train.py", "import torch  # v2\n");
  SyncSummary s4 = f.push_fresh();
  BOOST_TEST(s4.files_sent == 1u);
  BOOST_TEST(read_file(f.remote / "train.py") == "import torch  # v2\n");
  calls = f.ep->take();
  BOOST_TEST(calls.count("sync/list") == 0u);
  BOOST_TEST(f.push_fresh().files_sent == 0u);
  BOOST_TEST(f.ep->take().count("sync/list") == 0u);
}

BOOST_AUTO_TEST_CASE(remote_edits_behind_ferrys_back_are_conflicts_without_a_listing) {
  Fixture f;
  write_file(f.local / "a.py", "a v1\n");
  write_file(f.local / "b.py", "b v1\n");
  write_file(f.local / "c.py", "c v1\n");
  f.push_fresh();
  f.ep->take();

  write_file(f.remote / "a.py", "edited on the box\n");
  write_file(f.remote / "b.py", "also edited on the box\n");
  write_file(f.local / "a.py", "a v2\n");
  fs::remove(f.local / "b.py");
  write_file(f.local / "c.py", "c v2\n");
  SyncSummary s = f.push_fresh();
  BOOST_TEST(f.ep->take().count("sync/list") == 0u);  // the fast path is what was tested
  BOOST_REQUIRE(s.conflicts.size() == 2u);
  std::set<std::string> paths{s.conflicts[0].path, s.conflicts[1].path};
  BOOST_TEST(paths.count("a.py") == 1u);
  BOOST_TEST(paths.count("b.py") == 1u);  // a delete checks too
  BOOST_TEST(read_file(f.remote / "a.py") == "edited on the box\n");
  BOOST_TEST(read_file(f.remote / "b.py") == "also edited on the box\n");
  BOOST_TEST(read_file(f.remote / "c.py") == "c v2\n");  // the rest went on

  SyncOptions force;
  force.force = true;
  SyncSummary forced = f.push_fresh(force);
  BOOST_TEST(forced.conflicts.empty());
  BOOST_TEST(read_file(f.remote / "a.py") == "a v2\n");
}

BOOST_AUTO_TEST_CASE(another_writer_makes_the_next_push_list) {
  Fixture f;
  write_file(f.local / "a.py", "a\n");
  f.push_fresh();
  // A second checkout syncing into the same remote directory.
  const fs::path other = f.t.path() / "other";
  write_file(other / "b.py", "b from elsewhere\n");
  f.push(*f.engine(other));
  f.ep->take();

  SyncSummary s = f.push_fresh();
  BOOST_TEST(f.ep->take()["sync/list"] == 1);
  BOOST_TEST(s.files_sent == 0u);
  BOOST_TEST(s.conflicts.empty());
  f.push_fresh();
  BOOST_TEST(f.ep->take().count("sync/list") == 0u);  // known again
}

// The end stamp comes from the write replies (no sync/state after the writes) only when they
// account for every bump since the start: another agent's write during the push is not taken
// for ours, and the next push lists.
BOOST_AUTO_TEST_CASE(a_write_by_someone_else_during_a_push_is_not_taken_for_ours) {
  Fixture f;
  write_file(f.local / "a.py", "a\n");
  f.push_fresh();
  write_file(f.local / "a.py", "a v2\n");
  f.ep->before_call = [&](std::string_view method) {
    if (method != "sync/writeBatch") return;
    // As another agent's write would: its bump lands between our stamp read and our write.
    const fs::path state = f.remote / ".ferry" / "sync-state";
    std::string line = read_file(state);
    const auto space = line.rfind(' ');
    const std::uint64_t n = std::stoull(line.substr(space + 1));
    write_file(state, line.substr(0, space + 1) + std::to_string(n + 1) + "\n");
  };
  f.ep->take();
  SyncSummary s = f.push_fresh();
  f.ep->before_call = nullptr;
  BOOST_TEST(s.files_sent == 1u);
  BOOST_TEST(f.ep->take()["sync/state"] == 2);  // the replies did not add up: asked again
  f.push_fresh();
  BOOST_TEST(f.ep->take()["sync/list"] == 1);  // not trusted
  f.push_fresh();
  BOOST_TEST(f.ep->take().count("sync/list") == 0u);  // known again
}

BOOST_AUTO_TEST_CASE(a_wiped_remote_is_sent_again) {
  Fixture f;
  make_tree(f.local, 50);
  f.push_fresh();
  fs::remove_all(f.remote);  // a fresh box, or rm -rf: the sync-state record goes with the tree
  f.ep->take();
  SyncSummary s = f.push_fresh();
  BOOST_TEST(f.ep->take()["sync/list"] == 1);
  BOOST_TEST(s.files_sent >= 50u);
  BOOST_TEST(s.conflicts.empty());
  BOOST_TEST(read_file(f.remote / "pkg3/m13.py") == "x = 13\n");
}

BOOST_AUTO_TEST_CASE(a_stale_persisted_manifest_costs_a_listing_never_a_skip) {
  Fixture f;
  write_file(f.local / "a.py", "a v1\n");
  write_file(f.local / "b.py", "b v1\n");
  f.push_fresh();
  const fs::path mpath = f.engine(f.local)->manifest_path();
  const std::string old_manifest = read_file(mpath);

  // The helper wrote a.py v2, then died before its manifest reached the disk.
  write_file(f.local / "a.py", "a v2\n");
  f.push_fresh();
  write_file(mpath, old_manifest);
  // Meanwhile b.py changed on the box, and locally too.
  write_file(f.remote / "b.py", "box\n");
  write_file(f.local / "b.py", "b v2\n");
  f.ep->take();

  SyncSummary s = f.push_fresh();
  BOOST_TEST(f.ep->take()["sync/list"] >= 1);  // the old generation is not trusted
  BOOST_REQUIRE(s.conflicts.size() == 1u);     // b.py: still a conflict
  BOOST_TEST(s.conflicts[0].path == "b.py");
  BOOST_TEST(read_file(f.remote / "b.py") == "box\n");
  BOOST_TEST(read_file(f.remote / "a.py") == "a v2\n");  // adopted, not a conflict
}

BOOST_AUTO_TEST_CASE(a_save_is_one_write_and_the_manifest_is_persisted_later) {
  Fixture f;
  make_tree(f.local, 200);
  auto e = f.engine(f.local);
  e->set_persist_delay(std::chrono::hours(1));
  f.push(*e);
  e->persist_now();
  f.ep->take();
  const std::string before = read_file(e->manifest_path());

  write_file(f.local / "pkg1/m11.py", "x = 'saved'\n");
  SyncOptions one;
  one.only_paths = {"pkg1/m11.py"};
  SyncSummary s = f.push(*e, one);
  BOOST_TEST(s.files_sent == 1u);
  BOOST_TEST(read_file(f.remote / "pkg1/m11.py") == "x = 'saved'\n");
  auto calls = f.ep->take();
  BOOST_TEST(calls.count("sync/list") == 0u);
  BOOST_TEST(calls["sync/writeBatch"] == 1);
  // Before; after, the write's reply carries the stamp that confirms only ours were written.
  BOOST_TEST(calls["sync/state"] == 1);

  BOOST_TEST(read_file(e->manifest_path()) == before);  // not rewritten on the save's path
  e->persist_now();
  auto m = load_manifest(e->manifest_path());
  BOOST_REQUIRE(m.has_value());
  BOOST_TEST(m->entries.at("pkg1/m11.py").size == std::string("x = 'saved'\n").size());
  BOOST_TEST(!m->remote_epoch.empty());

  // The next full push from disk is still a no-op without a listing.
  e.reset();
  BOOST_TEST(f.push_fresh().files_sent == 0u);
  BOOST_TEST(f.ep->take().count("sync/list") == 0u);
}

BOOST_AUTO_TEST_CASE(a_one_byte_edit_without_a_local_copy_goes_in_two_levels) {
  Fixture f;
  std::string big(24u << 20, '\0');
  std::mt19937_64 rng(11);
  for (auto& c : big) c = static_cast<char>(rng());
  write_file(f.local / "model.bin", big);
  f.push_fresh();
  fs::remove_all(f.local / ".ferry" / "sent");  // no copy of what was sent: the agent signs
  big[(17u << 20) + 5] ^= 0x40;
  write_file(f.local / "model.bin", big);
  f.ep->take();
  SyncSummary s = f.push_fresh();
  BOOST_TEST(s.errors.empty());
  BOOST_TEST(s.files_sent == 1u);
  BOOST_TEST(f.ep->take()["sync/signature"] == 2);  // 1 MiB blocks, then 1 KiB blocks of one MiB
  // One level would be ~5 KiB blocks x 12 B over 24 MiB (~58 KiB) plus a block of literal.
  BOOST_TEST(s.bytes_on_wire < 20u * 1024);
  BOOST_TEST(s.bytes_literal <= 2048u);
  BOOST_TEST(read_file(f.remote / "model.bin") == big);
}

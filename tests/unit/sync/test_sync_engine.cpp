// The sync engine end to end over LocalEndpoint and the real ferry-agent: push a tree into a
// sandbox and compare both trees entry by entry (hash of every file, modes, symlinks, empty
// dirs, odd names, 0-byte files), a no-op second push, a 1-byte edit going as a delta, a remote
// edit reported as a conflict and left alone, delete rules, pull, and hostile paths sent to the
// agent directly.
#define BOOST_TEST_MODULE sync_engine
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <fmt/format.h>

#include "helper/remote/local_endpoint.hpp"
#include "helper/sync/file_meta.hpp"
#include "helper/sync/scanner.hpp"
#include "helper/sync/sync_engine.hpp"
#include "protocol/payload_codec.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/sandbox_agent.hpp"

using namespace ferry::sync;
namespace fs = std::filesystem;
using ferry::test::TempDir;
using ferry::test::write_file;
using ferry::test::read_bytes;
using Buf = std::vector<std::uint8_t>;
using ferry::remote::LocalEndpoint;
using ferry::remote::LocalEndpointOptions;
using json = nlohmann::json;

namespace {

Buf text(const std::string& s) { return Buf(s.begin(), s.end()); }
using ferry::test::random_bytes;

TreeState scan(const fs::path& root) {
  auto r = scan_tree(root, IgnoreMatcher::for_tree(root, {}), nullptr);
  BOOST_REQUIRE(r.has_value());
  return r->entries;
}

// Every entry equal (hash, mode, size, mtime of files, link targets); dir mtimes move on their own.
void require_same_trees(TreeState a, TreeState b) {
  for (auto* t : {&a, &b})
    for (auto& [p, meta] : *t)
      if (meta.kind != EntryKind::file) meta.mtime_ns = 0;
  std::vector<std::string> ka, kb;
  for (auto& kv : a) ka.push_back(kv.first);
  for (auto& kv : b) kb.push_back(kv.first);
  BOOST_REQUIRE_EQUAL_COLLECTIONS(ka.begin(), ka.end(), kb.begin(), kb.end());
  for (const auto& [p, meta] : a) {
    BOOST_TEST_CONTEXT(p) { BOOST_TEST((meta == b.at(p))); }
  }
}

// A project, a sandbox agent, and an engine pushing the project to <sandbox>/proj.
struct Fixture {
  TempDir t;
  fs::path local = t.path() / "local";
  fs::path sandbox = t.path() / "sandbox";
  fs::path remote = sandbox / "proj";
  std::unique_ptr<LocalEndpoint> ep;

  Fixture() {
    fs::create_directories(local);
    ep = ferry::test::connect_sandbox_agent(FERRY_AGENT_PATH, sandbox);
  }
  SyncEngine engine(std::vector<std::string> protect = {}) {
    return SyncEngine(*ep, SyncTarget{local, "proj", "local", "~/proj", {}, std::move(protect)});
  }
  SyncSummary push(SyncOptions o = {}, std::vector<std::string> protect = {}) {
    auto s = engine(std::move(protect)).push(o);
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    for (const auto& e : s->errors) BOOST_TEST_MESSAGE("sync error: " << e);
    return *s;
  }
};

void make_tree(const fs::path& root) {
  write_file(root / "train.py", text("import torch\n"));
  write_file(root / "run.sh", text("#!/bin/sh\npython train.py\n"));
  fs::permissions(root / "run.sh", fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
  write_file(root / "empty.txt", Buf{});
  write_file(root / "données/über café.txt", text("unicode and spaces\n"));
  write_file(root / "with space/a b.py", text("x = 1\n"));
  write_file(root / "data/weights.bin", random_bytes(700000, 1));
  for (int i = 0; i < 300; ++i) write_file(root / "many" / fmt::format("f{}.txt", i), text(std::to_string(i)));
  fs::create_directories(root / "empty/nested");
  fs::create_symlink("train.py", root / "main.py");
  fs::create_symlink("/etc/passwd", root / "outside-link");  // synced as a link, never followed
  write_file(root / ".gitignore", text("*.pyc\n"));
  write_file(root / "cache.pyc", text("junk"));
  // Directories with modes of their own, holding files: sync/mkdir and the batches that write
  // into them are in flight together, and either order must end with these modes.
  for (int i = 0; i < 40; ++i) write_file(root / "private/keys" / fmt::format("k{}.txt", i), text("secret"));
  fs::permissions(root / "private", fs::perms::owner_all);
  fs::permissions(root / "private/keys", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
}

}  // namespace

BOOST_AUTO_TEST_CASE(push_makes_an_identical_tree_and_a_second_push_sends_nothing) {
  Fixture f;
  make_tree(f.local);
  SyncSummary s1 = f.push();
  BOOST_TEST(s1.errors.empty());
  BOOST_TEST(s1.conflicts.empty());
  BOOST_TEST(s1.files_sent >= 300u);
  BOOST_TEST(s1.bytes_on_wire > 0u);
  require_same_trees(scan(f.local), scan(f.remote));
  BOOST_TEST(!fs::exists(f.remote / "cache.pyc"));
  BOOST_TEST(fs::read_symlink(f.remote / "outside-link") == "/etc/passwd");
  BOOST_TEST(fs::is_directory(f.remote / "empty/nested"));
  BOOST_TEST(fs::file_size(f.remote / "empty.txt") == 0u);

  SyncSummary s2 = f.push();
  BOOST_TEST(s2.files_sent == 0u);
  BOOST_TEST(s2.files_deleted == 0u);
  BOOST_TEST(s2.bytes_on_wire == 0u);
  BOOST_TEST(s2.conflicts.empty());
  BOOST_TEST(s2.dirs_made == 0u);
  BOOST_TEST(s2.metadata_only == 0u);
  // Its wire JSON is checked in tests/unit/server/test_sync_result.cpp.
}

BOOST_AUTO_TEST_CASE(a_file_deleted_between_scan_and_send_is_left_for_the_next_sync_not_an_error) {
  Fixture f;
  make_tree(f.local);
  f.push();
  write_file(f.local / "new.py", text("print('soon gone')\n"));
  write_file(f.local / "data/weights.bin", random_bytes(700000, 2));  // a delta candidate, also removed
  SyncOptions o;
  o.before_transfer = [&] {
    fs::remove(f.local / "new.py");
    fs::remove(f.local / "data/weights.bin");
  };
  SyncSummary s = f.push(o);
  BOOST_TEST(s.errors.empty());
  BOOST_TEST(s.conflicts.empty());
  const std::set<std::string> unstable(s.unstable.begin(), s.unstable.end());
  BOOST_TEST(unstable.count("new.py") == 1u);
  BOOST_TEST(unstable.count("data/weights.bin") == 1u);
  BOOST_TEST(!fs::exists(f.remote / "new.py"));

  // The next sync sees the deletion like any other: the remote copy ferry wrote goes too.
  SyncSummary s2 = f.push();
  BOOST_TEST(s2.errors.empty());
  BOOST_TEST(!fs::exists(f.remote / "data/weights.bin"));
  require_same_trees(scan(f.local), scan(f.remote));
}

BOOST_AUTO_TEST_CASE(a_walk_prepared_while_connecting_plans_the_push_and_changes_since_wait_for_the_next) {
  Fixture f;
  make_tree(f.local);
  SyncEngine e = f.engine();
  e.prepare_push({});
  // Changes after the prepared walk: a new file it did not see, a file it saw that grew.
  write_file(f.local / "late.py", text("print('after the walk')\n"));
  write_file(f.local / "with space/a b.py", text("x = 1  # and more, so the size changes\n"));
  auto s = e.push({});
  BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
  BOOST_TEST(s->local_scan == "prepared");
  BOOST_TEST(s->errors.empty());
  BOOST_TEST(s->files_sent >= 300u);
  BOOST_TEST(!fs::exists(f.remote / "late.py"));  // not in the walk: the next push's
  const std::set<std::string> unstable(s->unstable.begin(), s->unstable.end());
  BOOST_TEST(unstable.count("with space/a b.py") == 1u);  // grew after the walk: re-read next time
  BOOST_TEST(!fs::exists(f.remote / "with space/a b.py"));

  auto s2 = e.push({});  // walks again (the prepared walk was used up)
  BOOST_REQUIRE(s2.has_value());
  BOOST_TEST(s2->local_scan == "full");
  BOOST_TEST(s2->errors.empty());
  BOOST_TEST(s2->unstable.empty());
  require_same_trees(scan(f.local), scan(f.remote));

  // A walk prepared for other options is not used.
  SyncOptions dry;
  dry.dry_run = true;
  e.prepare_push(dry);
  auto s3 = e.push({});
  BOOST_REQUIRE(s3.has_value());
  BOOST_TEST(s3->local_scan == "full");
  BOOST_TEST(s3->files_sent == 0u);
}

BOOST_AUTO_TEST_CASE(one_byte_edit_of_a_large_file_goes_as_a_small_delta) {
  Fixture f;
  Buf big = random_bytes(4u << 20, 7);
  write_file(f.local / "model.bin", big);
  SyncSummary s1 = f.push();
  BOOST_TEST(s1.bytes_literal == big.size());

  big[2'000'000] ^= 0x5a;
  write_file(f.local / "model.bin", big);
  SyncSummary s2 = f.push();
  BOOST_TEST(s2.errors.empty());
  BOOST_TEST(s2.files_sent == 1u);
  BOOST_TEST(s2.bytes_literal < 64u * 1024);  // one block's worth, not the file
  BOOST_TEST(s2.bytes_matched > big.size() - 64u * 1024);
  BOOST_TEST(s2.bytes_on_wire < 64u * 1024);
  BOOST_TEST((read_bytes(f.remote / "model.bin") == big));
  // The sent copy of the new version was built from the old one and the delta: exact, named by
  // its hash, and the base of the next edit (again no signature: a few KiB on the wire).
  const fs::path copy = f.local / ".ferry" / "sent" / to_hex(ferry::delta::hash128(big));
  BOOST_REQUIRE(fs::exists(copy));
  BOOST_TEST((read_bytes(copy) == big));
  big[3'000'000] ^= 0x33;
  write_file(f.local / "model.bin", big);
  SyncSummary s2b = f.push();
  BOOST_TEST(s2b.errors.empty());
  BOOST_TEST(s2b.bytes_on_wire < 16u * 1024);
  BOOST_TEST((read_bytes(f.remote / "model.bin") == big));
  BOOST_TEST((read_bytes(f.local / ".ferry" / "sent" / to_hex(ferry::delta::hash128(big))) == big));

  // Without the helper's copy the agent's signature is the base: still a delta.
  fs::remove_all(f.local / ".ferry" / "sent");
  big[100] ^= 0x11;
  write_file(f.local / "model.bin", big);
  SyncSummary s3 = f.push();
  BOOST_TEST(s3.errors.empty());
  BOOST_TEST(s3.bytes_literal < 64u * 1024);
  BOOST_TEST(s3.bytes_on_wire < 256u * 1024);  // signature (~ block count x 12 bytes) + delta
  BOOST_TEST((read_bytes(f.remote / "model.bin") == big));
}

// Edits that keep the size, with prepare_above lowered to reach them: the agent copies its file
// while the helper makes the delta (sync/prepareDelta), and a pull copies the local file while
// the agent makes its delta; both land byte-exact and leave no temp file on either side.
BOOST_AUTO_TEST_CASE(same_size_edits_land_in_a_copy_made_while_the_delta_travels) {
  Fixture f;
  SyncOptions o;
  o.prepare_above = 1u << 20;
  Buf big = random_bytes((6u << 20) + 77, 17);
  write_file(f.local / "model.bin", big);
  BOOST_TEST(f.push(o).errors.empty());
  const auto no_temp_files = [](const fs::path& dir) {
    for (auto& de : fs::recursive_directory_iterator(dir))
      if (de.path().filename().string().starts_with(".ferry-tmp.")) return false;
    return true;
  };
  for (int round = 0; round < 2; ++round) {
    BOOST_TEST_CONTEXT("push round " << round) {
      if (round == 1) fs::remove_all(f.local / ".ferry" / "sent");  // the agent's signature as the base
      big[1'000'000 + static_cast<std::size_t>(round) * 3'000'000] ^= 0x5a;
      write_file(f.local / "model.bin", big);
      SyncSummary s = f.push(o);
      BOOST_TEST(s.errors.empty());
      BOOST_TEST(s.files_sent == 1u);
      BOOST_TEST(s.bytes_on_wire < 256u * 1024);
      BOOST_TEST((read_bytes(f.remote / "model.bin") == big));
      BOOST_TEST(no_temp_files(f.remote));
    }
  }
  big[big.size() / 3] ^= 0x21;
  write_file(f.remote / "model.bin", big);
  fs::last_write_time(f.remote / "model.bin", fs::last_write_time(f.remote / "model.bin") + std::chrono::seconds(5));
  auto s = f.engine().pull({"model.bin"}, o);
  BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
  BOOST_TEST(s->errors.empty());
  BOOST_TEST(s->files_sent == 1u);
  BOOST_TEST(s->bytes_on_wire < 256u * 1024);
  BOOST_TEST((read_bytes(f.local / "model.bin") == big));
  BOOST_TEST(no_temp_files(f.local));
}

BOOST_AUTO_TEST_CASE(a_remote_edit_is_a_conflict_and_left_untouched_unless_forced) {
  Fixture f;
  write_file(f.local / "a.py", text("local v1\n"));
  write_file(f.local / "b.py", text("b\n"));
  f.push();
  write_file(f.remote / "a.py", text("edited on the box\n"));
  write_file(f.local / "a.py", text("local v2\n"));
  write_file(f.local / "b.py", text("b2\n"));
  SyncSummary s = f.push();
  BOOST_REQUIRE(s.conflicts.size() == 1u);
  BOOST_TEST(s.conflicts[0].path == "a.py");
  BOOST_TEST((read_bytes(f.remote / "a.py") == text("edited on the box\n")));
  BOOST_TEST((read_bytes(f.remote / "b.py") == text("b2\n")));  // the rest of the sync went on

  SyncOptions force;
  force.force = true;
  SyncSummary s2 = f.push(force);
  BOOST_TEST(s2.conflicts.empty());
  BOOST_TEST((read_bytes(f.remote / "a.py") == text("local v2\n")));
}

BOOST_AUTO_TEST_CASE(deletes_touch_only_what_ferry_wrote_unless_mirroring) {
  Fixture f;
  write_file(f.local / "keep.py", text("k"));
  write_file(f.local / "gone.py", text("g"));
  write_file(f.local / "old/x.py", text("x"));
  f.push();
  write_file(f.remote / "remote-only.txt", text("made on the box"));
  write_file(f.remote / "datasets/big.npy", text("data"));
  fs::remove(f.local / "gone.py");
  fs::remove_all(f.local / "old");

  SyncOptions none;
  none.deletes = DeleteMode::none;
  SyncSummary s0 = f.push(none);
  BOOST_TEST(s0.files_deleted == 0u);
  BOOST_TEST(fs::exists(f.remote / "gone.py"));

  SyncSummary s1 = f.push();  // default: what ferry wrote, deleted locally
  BOOST_TEST(s1.files_deleted == 2u);
  BOOST_TEST(!fs::exists(f.remote / "gone.py"));
  BOOST_TEST(!fs::exists(f.remote / "old"));
  BOOST_TEST(fs::exists(f.remote / "remote-only.txt"));

  SyncOptions mirror;
  mirror.deletes = DeleteMode::mirror;
  SyncSummary s2 = f.push(mirror, {"/datasets/"});
  BOOST_TEST(!fs::exists(f.remote / "remote-only.txt"));
  BOOST_TEST(fs::exists(f.remote / "datasets/big.npy"));  // protected
  BOOST_TEST(fs::exists(f.remote / "keep.py"));
  BOOST_TEST(s2.conflicts.empty());
}

BOOST_AUTO_TEST_CASE(mass_deletes_wait_for_confirmation) {
  Fixture f;
  for (int i = 0; i < 120; ++i) write_file(f.local / "out" / fmt::format("{}.log", i), text("l"));
  write_file(f.local / "keep.py", text("k"));
  f.push();
  fs::remove_all(f.local / "out");
  SyncSummary held = f.push();
  BOOST_TEST(held.files_deleted == 0u);
  BOOST_TEST(held.held_deletes.size() == 120u);
  BOOST_TEST(fs::exists(f.remote / "out/7.log"));

  SyncOptions yes;
  std::size_t asked = 0;
  yes.confirm_mass_delete = [&](const std::string&, std::size_t n) {
    asked = n;
    return true;
  };
  SyncSummary done = f.push(yes);
  BOOST_TEST(asked >= 120u);
  BOOST_TEST(done.files_deleted == 120u);
  BOOST_TEST(!fs::exists(f.remote / "out"));
}

BOOST_AUTO_TEST_CASE(pull_brings_remote_outputs_back_and_guards_local_edits) {
  Fixture f;
  write_file(f.local / "train.py", text("t"));
  f.push();
  Buf ckpt = random_bytes(9u << 20, 3);  // more than one read chunk
  write_file(f.remote / "outputs/ckpt.pt", ckpt);
  fs::permissions(f.remote / "outputs/ckpt.pt", fs::perms::owner_exec, fs::perm_options::add);
  write_file(f.remote / "outputs/log.txt", text("epoch 1\n"));
  fs::create_symlink("ckpt.pt", f.remote / "outputs/latest");

  auto s = f.engine().pull({"outputs"}, {});
  BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
  BOOST_TEST(s->errors.empty());
  BOOST_TEST(s->files_sent == 3u);
  BOOST_TEST((read_bytes(f.local / "outputs/ckpt.pt") == ckpt));
  BOOST_TEST(((fs::status(f.local / "outputs/ckpt.pt").permissions() & fs::perms::owner_exec) != fs::perms::none));
  BOOST_TEST(fs::read_symlink(f.local / "outputs/latest") == "ckpt.pt");
  BOOST_TEST((fs::last_write_time(f.local / "outputs/log.txt") == fs::last_write_time(f.remote / "outputs/log.txt")));

  // Pulled files are in the manifest: a push now sends nothing back.
  SyncSummary p = f.push();
  BOOST_TEST(p.files_sent == 0u);
  BOOST_TEST(p.conflicts.empty());

  // A local edit of a file that also changed remotely is a conflict for pull too.
  write_file(f.local / "outputs/log.txt", text("edited here\n"));
  write_file(f.remote / "outputs/log.txt", text("epoch 2\n"));
  auto s2 = f.engine().pull({"outputs/log.txt"}, {});
  BOOST_REQUIRE(s2.has_value());
  BOOST_REQUIRE(s2->conflicts.size() == 1u);
  BOOST_TEST((read_bytes(f.local / "outputs/log.txt") == text("edited here\n")));
  SyncOptions force;
  force.force = true;
  auto s3 = f.engine().pull({"outputs/log.txt"}, force);
  BOOST_REQUIRE(s3.has_value());
  BOOST_TEST((read_bytes(f.local / "outputs/log.txt") == text("epoch 2\n")));

  BOOST_TEST(!f.engine().pull({"../escape"}, {}).has_value());
}

// A big file changed on the box comes back as a two-level delta (16 MiB and more): the local
// copy is signed from a mapping, the agent maps and hashes its file, the local file is rebuilt
// with kernel copies; byte-exact, for an edit in the middle and a block-unaligned insertion.
BOOST_AUTO_TEST_CASE(a_big_file_changed_remotely_is_pulled_as_a_small_delta) {
  Fixture f;
  Buf big = random_bytes((24u << 20) + 4321, 9);
  write_file(f.local / "out/model.bin", big);
  SyncSummary first = f.push();
  BOOST_TEST(first.errors.empty());
  for (int round = 0; round < 2; ++round) {
    BOOST_TEST_CONTEXT("round " << round) {
      if (round == 0) big[big.size() / 3] ^= 0x21;
      else big.insert(big.begin() + 5'000'001, {1, 2, 3, 4, 5});
      write_file(f.remote / "out/model.bin", big);
      fs::last_write_time(f.remote / "out/model.bin", fs::last_write_time(f.remote / "out/model.bin") + std::chrono::seconds(5 + round));
      auto s = f.engine().pull({"out/model.bin"}, {});
      BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
      BOOST_TEST(s->errors.empty());
      BOOST_TEST(s->files_sent == 1u);
      BOOST_TEST(s->bytes_on_wire < 256u * 1024);  // signatures + a few KiB of literal, not 24 MiB
      BOOST_TEST((read_bytes(f.local / "out/model.bin") == big));
    }
  }
}

BOOST_AUTO_TEST_CASE(sync_on_save_pushes_just_that_path) {
  Fixture f;
  write_file(f.local / "a.py", text("a"));
  write_file(f.local / "b.py", text("b"));
  f.push();
  write_file(f.local / "a.py", text("a2"));
  write_file(f.local / "b.py", text("b2"));
  SyncOptions one;
  one.only_paths = {"a.py"};
  SyncSummary s = f.push(one);
  BOOST_TEST(s.files_sent == 1u);
  BOOST_TEST(s.files_deleted == 0u);
  BOOST_TEST((read_bytes(f.remote / "a.py") == text("a2")));
  BOOST_TEST((read_bytes(f.remote / "b.py") == text("b")));

  // The saved path's remote state is checked too: an edit on the box is a conflict.
  write_file(f.remote / "a.py", text("box"));
  write_file(f.local / "a.py", text("a3"));
  SyncSummary c = f.push(one);
  BOOST_REQUIRE(c.conflicts.size() == 1u);
  BOOST_TEST((read_bytes(f.remote / "a.py") == text("box")));
  // A saved path deleted locally goes on the remote too (ferry wrote it).
  fs::remove(f.local / "b.py");
  one.only_paths = {"b.py"};
  BOOST_TEST(f.push(one).files_deleted == 1u);
  BOOST_TEST(!fs::exists(f.remote / "b.py"));
}

BOOST_AUTO_TEST_CASE(the_agent_rejects_paths_that_leave_its_root) {
  Fixture f;
  fs::create_directories(f.t.path() / "outside");
  fs::create_directories(f.sandbox);
  fs::create_symlink(f.t.path() / "outside", f.sandbox / "escape");
  const auto data = ferry::protocol::compress_payload(reinterpret_cast<const std::uint8_t*>("pwn"), 3);
  auto file = [&](const std::string& path) {
    Hash128 h = ferry::delta::hash128(ferry::delta::Bytes(reinterpret_cast<const std::uint8_t*>("pwn"), 3));
    return json{{"path", path},
                {"size", 3},
                {"hash", json::binary_t(std::vector<std::uint8_t>(h.begin(), h.end()))},
                {"mode", 0644},
                {"mtimeNs", 0},
                {"data", json::binary_t(data)}};
  };
  for (const std::string bad : {"../x", "/tmp/x", "a/../../x", "escape/x"}) {
    BOOST_TEST_CONTEXT(bad) {
      auto r = f.ep->call("sync/writeBatch", json{{"files", json::array({file(bad)})}});
      BOOST_REQUIRE(r.has_value());
      BOOST_TEST((*r)["results"][0]["ok"] == false);
      auto rd = f.ep->call("sync/read", json{{"path", bad}});
      BOOST_TEST(!rd.has_value());
      auto del = f.ep->call("sync/delete", json{{"paths", json::array({bad})}});
      BOOST_REQUIRE(del.has_value());
      BOOST_TEST((*del)["results"][0]["ok"] == false);
    }
  }
  for (const std::string bad_base : {"..", "/etc", "escape"}) {
    BOOST_TEST_CONTEXT(bad_base) {
      auto r = f.ep->call("sync/writeBatch", json{{"base", bad_base}, {"files", json::array({file("x")})}});
      bool refused = !r.has_value() || (*r)["results"][0]["ok"] == false;
      BOOST_TEST(refused);
    }
  }
  BOOST_TEST(fs::is_empty(f.t.path() / "outside"));
  BOOST_TEST(!fs::exists(f.t.path() / "x"));
  // A link inside the root pointing out is never read through.
  fs::create_symlink("/etc/hostname", f.sandbox / "link");
  BOOST_TEST(!f.ep->call("sync/read", json{{"path", "link"}}).has_value());
  // Hostile sizes: a frame claiming more bytes than declared is refused per file.
  json lying = file("ok.txt");
  lying["size"] = 1u << 30;
  auto r = f.ep->call("sync/writeBatch", json{{"files", json::array({lying})}});
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST((*r)["results"][0]["ok"] == false);
}

// Linux names are bytes: a name or a link target that is not UTF-8 syncs, and the manifest
// keeps it (entries_hex), so the next engine's push is a no-op rather than a crash or a resend.
BOOST_AUTO_TEST_CASE(names_that_are_not_utf8_sync_and_the_next_push_is_a_no_op) {
  Fixture f;
  write_file(f.local / "bad\xffname.txt", text("latin-1 or worse"));
  write_file(f.local / "d\xe9j\xe0/vu.py", text("print(1)"));
  fs::create_symlink("t\xc0\x80rget", f.local / "odd-link");
  write_file(f.local / "ok.txt", text("fine"));
  SyncSummary first = f.push();
  BOOST_TEST(first.errors.empty());
  BOOST_TEST(first.files_sent == 4u);
  require_same_trees(scan(f.local), scan(f.remote));
  SyncSummary second = f.push();
  BOOST_TEST(second.errors.empty());
  BOOST_TEST(second.files_sent == 0u);
  BOOST_TEST(second.files_deleted == 0u);
  write_file(f.local / "bad\xffname.txt", text("edited"));
  BOOST_TEST(f.push().files_sent == 1u);
  BOOST_TEST((read_bytes(f.remote / "bad\xffname.txt") == text("edited")));
}

BOOST_AUTO_TEST_CASE(files_over_the_stream_threshold_go_in_chunks) {
  Fixture f;
  Buf big = random_bytes(9u << 20, 11);  // two 8 MiB chunks
  write_file(f.local / "ckpt/model.pt", big);
  write_file(f.local / "small.txt", text("s"));
  SyncOptions o;
  o.stream_above = 1u << 20;
  SyncSummary s = f.push(o);
  BOOST_TEST(s.errors.empty());
  BOOST_TEST(s.files_sent == 2u);
  BOOST_TEST(s.bytes_literal == big.size() + 1);
  BOOST_TEST((read_bytes(f.remote / "ckpt/model.pt") == big));
  BOOST_TEST(f.push(o).files_sent == 0u);

  // The agent refuses more bytes than announced and unknown handles.
  Hash128 h{};
  auto begun = f.ep->call("sync/fileBegin", json{{"path", "x.bin"}, {"size", 2}, {"mode", 0644}, {"mtimeNs", 0},
                                                 {"hash", json::binary_t(std::vector<std::uint8_t>(h.begin(), h.end()))}});
  BOOST_REQUIRE(begun.has_value());
  auto data = ferry::protocol::compress_payload(reinterpret_cast<const std::uint8_t*>("abc"), 3);
  auto too_much = f.ep->call("sync/fileAppend", json{{"handle", (*begun)["handle"]}, {"rawSize", 3}, {"data", json::binary_t(data)}});
  BOOST_TEST(!too_much.has_value());
  BOOST_TEST(!f.ep->call("sync/fileCommit", json{{"handle", (*begun)["handle"]}}).has_value());
  BOOST_TEST(!fs::exists(f.remote / "x.bin"));
  BOOST_TEST(!fs::exists(f.sandbox / "x.bin"));
}

// Several chunks in flight: more chunks than workers, incompressible and text-like files both,
// a size that is no multiple of the chunk; each arrives byte-identical.
BOOST_AUTO_TEST_CASE(big_files_stream_with_chunks_in_flight) {
  Fixture f;
  Buf noise = random_bytes((41u << 20) + 12345, 12);  // six chunks, the last short
  Buf words((33u << 20) + 7);
  std::mt19937_64 rng(13);
  for (auto& b : words) b = static_cast<std::uint8_t>("abcdefgh \n"[rng() % 10]);
  write_file(f.local / "ckpt/noise.bin", noise);
  write_file(f.local / "data/words.txt", words);
  SyncOptions o;
  o.stream_above = 1u << 20;
  SyncSummary s = f.push(o);
  BOOST_TEST(s.errors.empty());
  BOOST_TEST(s.unstable.empty());
  BOOST_TEST(s.files_sent == 2u);
  BOOST_TEST((read_bytes(f.remote / "ckpt/noise.bin") == noise));
  BOOST_TEST((read_bytes(f.remote / "data/words.txt") == words));
  BOOST_TEST(s.bytes_on_wire < noise.size() + words.size() / 2);  // the text compressed
}

// sync/fileAppend with `offset`: any order reassembles; an overlap or a range past the size is
// refused (and ends the upload); a missing range fails the commit; appends without `offset`
// (older helpers) still go one after the other.
BOOST_AUTO_TEST_CASE(file_appends_at_offsets) {
  Fixture f;
  const Buf content = random_bytes(300'000, 14);
  const auto h = ferry::delta::hash128(content);
  const json hash = json::binary_t(std::vector<std::uint8_t>(h.begin(), h.end()));
  auto begin = [&](const std::string& path) {
    auto b = f.ep->call("sync/fileBegin", json{{"path", path}, {"size", content.size()}, {"mode", 0644}, {"mtimeNs", 0}, {"hash", hash}});
    BOOST_REQUIRE(b.has_value());
    return (*b)["handle"];
  };
  auto append = [&](const json& handle, std::optional<std::size_t> at, std::size_t from, std::size_t n) {
    auto data = ferry::protocol::compress_payload(content.data() + from, n);
    json p{{"handle", handle}, {"rawSize", n}, {"data", json::binary_t(data)}};
    if (at) p["offset"] = *at;
    return f.ep->call("sync/fileAppend", p);
  };
  // Out of order.
  json h1 = begin("a.bin");
  for (std::size_t at : {200'000u, 0u, 100'000u}) BOOST_REQUIRE(append(h1, at, at, 100'000).has_value());
  auto c1 = f.ep->call("sync/fileCommit", json{{"handle", h1}});
  BOOST_REQUIRE_MESSAGE(c1.has_value(), (c1 ? "" : c1.error().message));
  BOOST_TEST((read_bytes(f.sandbox / "a.bin") == content));
  // Overlap: refused, and the upload is over.
  json h2 = begin("b.bin");
  BOOST_REQUIRE(append(h2, 0, 0, 100'000).has_value());
  BOOST_TEST(!append(h2, 50'000, 50'000, 100'000).has_value());
  BOOST_TEST(!f.ep->call("sync/fileCommit", json{{"handle", h2}}).has_value());
  BOOST_TEST(!fs::exists(f.sandbox / "b.bin"));
  // Past the announced size.
  json h3 = begin("c.bin");
  BOOST_TEST(!append(h3, 250'000, 0, 100'000).has_value());
  BOOST_TEST(!fs::exists(f.sandbox / "c.bin"));
  // A missing range.
  json h4 = begin("d.bin");
  BOOST_REQUIRE(append(h4, 0, 0, 100'000).has_value());
  BOOST_REQUIRE(append(h4, 200'000, 200'000, 100'000).has_value());
  auto c4 = f.ep->call("sync/fileCommit", json{{"handle", h4}});
  BOOST_REQUIRE(!c4.has_value());
  BOOST_TEST(c4.error().data.value_or(json::object()).value("code", "") == "hash_mismatch");
  BOOST_TEST(!fs::exists(f.sandbox / "d.bin"));
  // Without offsets, in order.
  json h5 = begin("e.bin");
  for (std::size_t at : {0u, 100'000u, 200'000u}) BOOST_REQUIRE(append(h5, std::nullopt, at, 100'000).has_value());
  BOOST_REQUIRE(f.ep->call("sync/fileCommit", json{{"handle", h5}}).has_value());
  BOOST_TEST((read_bytes(f.sandbox / "e.bin") == content));
  for (auto& e : fs::recursive_directory_iterator(f.sandbox))
    BOOST_TEST(!e.path().filename().string().starts_with(".ferry-tmp."), e.path());
}

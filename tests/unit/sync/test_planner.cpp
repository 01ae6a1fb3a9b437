// Push planner: every rule of the sync contract as a small three-way scenario (local scan,
// manifest of what ferry wrote, remote state), plus manifest persistence.
#define BOOST_TEST_MODULE planner
#include <boost/test/unit_test.hpp>


#include <filesystem>
#include <map>

#include "helper/sync/manifest.hpp"
#include "helper/sync/planner.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::sync;

namespace {

// "f" + std::to_string(i) without GCC 12's -Wrestrict false positive.
std::string numbered(const char* prefix, int i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

Hash128 h(int n) {
  Hash128 x{};
  x[0] = static_cast<std::uint8_t>(n);
  x[15] = 0xee;
  return x;
}

FileMeta file(int content, std::uint64_t size = 10, std::int64_t mtime = 1000, std::uint32_t mode = 0644) {
  return FileMeta{EntryKind::file, mode, size, mtime, h(content), {}};
}
// What an agent reports without hashing: size, mtime, mode only.
FileMeta bare(const FileMeta& f) {
  FileMeta r = f;
  r.hash.reset();
  return r;
}
FileMeta dir(std::uint32_t mode = 0755) { return FileMeta{EntryKind::dir, mode, 0, 5, std::nullopt, {}}; }
FileMeta link(const std::string& target) {
  return FileMeta{EntryKind::symlink, 0777, target.size(), 5, std::nullopt, target};
}

std::vector<std::string> paths(const std::vector<Transfer>& t) {
  std::vector<std::string> out;
  for (const auto& x : t) out.push_back(x.path);
  return out;
}
std::vector<std::string> conflict_paths(const Plan& p) {
  std::vector<std::string> out;
  for (const auto& c : p.conflicts) out.push_back(c.path);
  return out;
}
using V = std::vector<std::string>;

// A manifest with an unknown remote sync-state (the planner does not look at it).
Manifest manifest(std::string remote_root, TreeState entries) {
  Manifest m;
  m.remote_root = std::move(remote_root);
  m.entries = std::move(entries);
  return m;
}

}  // namespace

BOOST_AUTO_TEST_CASE(first_push_sends_everything_small_whole) {
  TreeState local{{"a.py", file(1)}, {"src", dir()}, {"src/b.py", file(2)}, {"ln", link("a.py")}, {"empty", dir()}};
  Plan p = plan_push(local, Manifest{}, {}, {});
  BOOST_TEST(p.mkdirs == (V{"empty", "src"}));
  BOOST_TEST(paths(p.send_whole) == (V{"a.py", "src/b.py"}));
  BOOST_TEST(paths(p.symlinks) == V{"ln"});
  BOOST_TEST(p.deletes.empty());
  BOOST_TEST(p.conflicts.empty());
  BOOST_TEST(p.whole_bytes() == 20u);
}

BOOST_AUTO_TEST_CASE(no_op_sync_is_nothing_to_do_even_without_remote_hashes) {
  TreeState local{{"a.py", file(1)}, {"big.bin", file(3, 1 << 20)}, {"d", dir()}};
  Manifest m = manifest("/r", local);
  TreeState remote{{"a.py", bare(file(1))}, {"big.bin", bare(file(3, 1 << 20))}, {"d", dir()}};
  Plan p = plan_push(local, m, remote, {});
  BOOST_TEST(p.nothing_to_do());
  BOOST_TEST(p.unchanged == 3u);
}

BOOST_AUTO_TEST_CASE(changed_files_go_whole_or_as_delta_by_size) {
  Manifest m = manifest("/r", {{"small.py", file(1)}, {"big.bin", file(3, 1 << 20)}});
  TreeState remote{{"small.py", bare(file(1))}, {"big.bin", bare(file(3, 1 << 20))}};
  TreeState local{{"small.py", file(2, 10, 2000)}, {"big.bin", file(4, (1 << 20) + 5, 2000)}};
  Plan p = plan_push(local, m, remote, {});
  BOOST_TEST(paths(p.send_whole) == V{"small.py"});
  BOOST_REQUIRE(p.send_delta.size() == 1u);
  BOOST_TEST(p.send_delta[0].path == "big.bin");
  BOOST_TEST(p.send_delta[0].remote_base->size == (1u << 20));

  // Past delta_max_size a delta would hold the file in memory on both ends: whole, streamed.
  PlanOptions capped;
  capped.delta_max_size = 1 << 20;
  Plan q = plan_push(local, m, remote, capped);
  BOOST_TEST(q.send_delta.empty());
  BOOST_TEST(paths(q.send_whole) == (V{"big.bin", "small.py"}));
  local["big.bin"] = file(4, 1000, 2000);  // shrinks below the cap, but its base is still above
  BOOST_TEST(plan_push(local, m, remote, capped).send_delta.empty());
}

BOOST_AUTO_TEST_CASE(mode_and_mtime_only_changes_are_metadata) {
  Manifest m = manifest("/r", {{"run.sh", file(1)}});
  TreeState remote{{"run.sh", bare(file(1))}};
  TreeState local{{"run.sh", file(1, 10, 1000, 0755)}};
  Plan p = plan_push(local, m, remote, {});
  BOOST_TEST(paths(p.metadata) == V{"run.sh"});
  BOOST_TEST(p.send_whole.empty());
}

BOOST_AUTO_TEST_CASE(remote_changes_behind_ferrys_back_are_conflicts) {
  Manifest m = manifest("/r", {{"a.py", file(1)}, {"b.py", file(1)}, {"c.py", file(1)}});
  TreeState remote{{"a.py", bare(file(9, 11, 3000))},  // edited on the box
                   {"b.py", bare(file(1))},
                   {"c.py", bare(file(9, 10, 3000))},   // edited on the box, deleted locally
                   {"d.py", bare(file(7))}};            // never written by ferry
  TreeState local{{"a.py", file(2, 10, 2000)}, {"b.py", file(2, 10, 2000)}, {"d.py", file(8)}};
  Plan p = plan_push(local, m, remote, {});
  BOOST_TEST(conflict_paths(p) == (V{"a.py", "c.py", "d.py"}));
  BOOST_TEST((p.conflicts[0].kind == ConflictKind::changed_remotely));
  BOOST_TEST((p.conflicts[1].kind == ConflictKind::deleted_locally_changed_remotely));
  BOOST_TEST((p.conflicts[2].kind == ConflictKind::untracked_remote));
  BOOST_TEST(paths(p.send_whole) == V{"b.py"});
  BOOST_TEST(p.deletes.empty());

  PlanOptions force;
  force.overwrite_conflicts = true;
  Plan f = plan_push(local, m, remote, force);
  BOOST_TEST(f.conflicts.empty());
  BOOST_TEST(paths(f.send_whole) == (V{"a.py", "b.py", "d.py"}));
  BOOST_TEST(f.deletes == V{"c.py"});
}

BOOST_AUTO_TEST_CASE(identical_untracked_remote_files_are_adopted_not_resent) {
  TreeState local{{"a.py", file(1)}};
  TreeState remote{{"a.py", file(1)}};  // the agent hashed it
  Plan p = plan_push(local, Manifest{}, remote, {});
  BOOST_TEST(p.adopted == V{"a.py"});
  BOOST_TEST(p.send_whole.empty());
  BOOST_TEST(p.conflicts.empty());
}

BOOST_AUTO_TEST_CASE(deletes_only_touch_what_ferry_wrote_unless_mirroring) {
  Manifest m = manifest("/r", {{"old.py", file(1)}, {"gone", dir()}, {"gone/x.py", file(2)}});
  TreeState remote{{"old.py", bare(file(1))},
                   {"gone", dir()},
                   {"gone/x.py", bare(file(2))},
                   {"outputs", dir()},
                   {"outputs/loss.csv", bare(file(5))},
                   {"notes.txt", bare(file(6))},
                   {"cache.tmp", bare(file(7))}};
  TreeState local{};
  const auto protect = IgnoreMatcher::from_patterns({"outputs/"});
  const auto ignore = IgnoreMatcher::from_patterns({"*.tmp"});
  PlanOptions opt;
  opt.protect = &protect;
  opt.ignore = &ignore;
  opt.mass_delete_fraction = 1.0;
  Plan owned = plan_push(local, m, remote, opt);
  BOOST_TEST(owned.deletes == (V{"gone/x.py", "old.py"}));
  BOOST_TEST(owned.rmdirs == V{"gone"});

  opt.deletes = DeleteMode::mirror;
  Plan mirror = plan_push(local, m, remote, opt);
  BOOST_TEST(mirror.deletes == (V{"gone/x.py", "notes.txt", "old.py"}));  // not protected, not excluded

  opt.deletes = DeleteMode::none;
  BOOST_TEST(plan_push(local, m, remote, opt).deletes.empty());
}

BOOST_AUTO_TEST_CASE(directories_with_surviving_content_stay) {
  Manifest m = manifest("/r", {{"d", dir()}, {"d/a", file(1)}, {"d/sub", dir()}, {"d/sub/b", file(2)}});
  TreeState remote{{"d", dir()}, {"d/a", bare(file(1))}, {"d/sub", dir()}, {"d/sub/b", bare(file(2))},
                   {"d/sub/user.txt", bare(file(3))}};
  PlanOptions opt;
  opt.mass_delete_fraction = 1.0;
  Plan p = plan_push({}, m, remote, opt);
  BOOST_TEST(p.deletes == (V{"d/a", "d/sub/b"}));
  BOOST_TEST(p.rmdirs.empty());  // d/sub/user.txt is not ferry's
}

BOOST_AUTO_TEST_CASE(mass_delete_guard_holds_deletes_until_confirmed) {
  Manifest m;
  TreeState remote;
  for (int i = 0; i < 150; ++i) {
    const std::string p = numbered("f", i);
    m.entries[p] = file(i);
    remote[p] = bare(file(i));
  }
  TreeState local;
  for (int i = 0; i < 140; ++i) local[numbered("f", i)] = file(i);
  Plan few = plan_push(local, m, remote, {});  // 10 of 150: under both limits
  BOOST_TEST(few.deletes.size() == 10u);
  BOOST_TEST(!few.needs_confirmation);

  local.clear();
  for (int i = 0; i < 100; ++i) local[numbered("f", i)] = file(i);
  Plan share = plan_push(local, m, remote, {});  // 50 of 150 > 20%
  BOOST_TEST(share.needs_confirmation);
  BOOST_TEST(share.deletes.empty());
  BOOST_TEST(share.held_deletes.size() == 50u);

  Plan all = plan_push({}, m, remote, {});  // 150 > 100
  BOOST_TEST(all.needs_confirmation);
  PlanOptions yes;
  yes.confirmed_mass_delete = true;
  BOOST_TEST(plan_push({}, m, remote, yes).deletes.size() == 150u);
}

BOOST_AUTO_TEST_CASE(a_partial_plan_measures_the_share_against_the_whole_tree) {
  // A save of 6 deleted files sees only those 6 remote files: 6 of 6 would trip the share rule.
  Manifest m;
  TreeState remote;
  for (int i = 0; i < 6; ++i) {
    m.entries[numbered("f", i)] = file(i);
    remote[numbered("f", i)] = bare(file(i));
  }
  BOOST_TEST(plan_push({}, m, remote, {}).needs_confirmation);
  PlanOptions whole;
  whole.tree_files = 500;
  Plan p = plan_push({}, m, remote, whole);
  BOOST_TEST(!p.needs_confirmation);
  BOOST_TEST(p.deletes.size() == 6u);
  whole.tree_files = 20;  // 6 of 20 is still more than 20%
  BOOST_TEST(plan_push({}, m, remote, whole).needs_confirmation);
}

BOOST_AUTO_TEST_CASE(unstable_and_protected_paths_are_left_alone) {
  Manifest m = manifest("/r", {{"log.txt", file(1)}, {".data/x", file(2)}});
  TreeState remote{{"log.txt", bare(file(1))}, {".data", dir()}, {".data/x", bare(file(2))}};
  TreeState local{{".data", dir()}, {".data/x", file(3, 10, 2000)}};
  const auto protect = IgnoreMatcher::from_patterns({"/.data/"});
  PlanOptions opt;
  opt.protect = &protect;
  opt.skip = {"log.txt"};  // changing while scanned: neither sent nor deleted
  Plan p = plan_push(local, m, remote, opt);
  BOOST_TEST(p.deletes.empty());
  BOOST_TEST(p.send_whole.empty());
  BOOST_TEST(p.protected_skipped == (V{".data/x"}));
}

BOOST_AUTO_TEST_CASE(kind_changes) {
  Manifest m = manifest("/r", {{"x", file(1)}, {"y", file(1)}});
  TreeState remote{{"x", bare(file(1))}, {"y", bare(file(9, 10, 7777))}, {"z", dir()}};
  TreeState local{{"x", dir()}, {"y", dir()}, {"z", file(4)}};
  Plan p = plan_push(local, m, remote, {});
  BOOST_TEST(p.replace == V{"x"});
  BOOST_TEST(p.mkdirs == V{"x"});
  BOOST_TEST(conflict_paths(p) == (V{"y", "z"}));
}

// Windows (adopt_box_modes): the laptop's modes say nothing, so the box keeps its own.
BOOST_AUTO_TEST_CASE(without_local_modes_the_box_keeps_its_modes_and_new_files_get_the_callbacks) {
  TreeState remote{{"run.sh", file(1, 10, 1000, 0755)}, {"same.py", file(2, 10, 1000, 0640)}, {"d", dir(0700)},
                   {"was_dir", dir(0711)}};
  // The laptop reports 0644 (files) and 0755 (folders) whatever the box has: run.sh changed.
  TreeState local{{"run.sh", file(9, 10, 1000)}, {"same.py", file(2, 10, 1000)}, {"d", dir()}, {"new.sh", file(3)},
                  {"new.py", file(4)}, {"nd", dir(0700)}, {"was_dir", file(5)}};
  Manifest m = manifest("/r", remote);
  // With local modes (Linux), these trees set the laptop's modes on the box.
  BOOST_TEST(paths(plan_push(local, m, remote, {}).metadata) == (V{"d", "same.py"}));

  std::vector<std::string> asked;
  adopt_box_modes(local, remote, [&](const std::string& path) {
    asked.push_back(path);
    return path.ends_with(".sh") ? 0755u : 0644u;
  });
  BOOST_TEST(asked == (V{"new.py", "new.sh", "was_dir"}));  // only files the box has no file for
  BOOST_TEST(local["nd"].mode == 0755u);                     // a new folder
  Plan p = plan_push(local, m, remote, {});
  BOOST_TEST(p.metadata.empty());  // same.py's and d's modes differ only on the laptop: nothing to set
  std::map<std::string, std::uint32_t> sent;
  for (const auto& t : p.send_whole) sent[t.path] = t.local.mode;
  BOOST_TEST(sent.size() == 3u);
  BOOST_TEST(sent["run.sh"] == 0755u);  // changed content keeps the box's exec bit
  BOOST_TEST(sent["new.sh"] == 0755u);
  BOOST_TEST(sent["new.py"] == 0644u);
}

BOOST_AUTO_TEST_CASE(manifest_round_trips_and_rejects_garbage) {
  Manifest m = manifest("~/proj", {{"a b/c.py", file(1, 3, -5, 0755)}, {"d", dir()}, {"l", link("../x")}});
  auto back = manifest_from_json(manifest_to_json(m));
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(back->remote_root == "~/proj");
  BOOST_TEST((back->entries == m.entries));
  BOOST_TEST(!manifest_from_json("{").has_value());
  BOOST_TEST(!manifest_from_json(R"({"version":2,"entries":{}})").has_value());
  BOOST_TEST(!manifest_from_json(R"({"version":1,"entries":{"a":{"kind":"file","mode":99999,"mtime_ns":1,"size":1}}})").has_value());
  BOOST_TEST(!manifest_from_json(R"({"version":1,"entries":{"a":{"kind":"file","mode":420,"mtime_ns":1,"size":1,"hash":"zz"}}})").has_value());

  ferry::test::TempDir dir;
  const std::filesystem::path f = dir.path() / ".ferry/manifest.json";
  BOOST_TEST(load_manifest(f)->entries.empty());
  BOOST_REQUIRE(save_manifest(f, m).has_value());
  BOOST_TEST((load_manifest(f)->entries == m.entries));

  const auto a = default_manifest_path("/p", "gpu-box", "~/proj");
  BOOST_TEST(a.parent_path() == "/p/.ferry");
  BOOST_TEST(a.filename().string().starts_with("manifest-"));
  BOOST_TEST(a != default_manifest_path("/p", "gpu-box", "~/proj2"));
  BOOST_TEST(a == default_manifest_path("/p", "gpu-box", "~/proj"));
}

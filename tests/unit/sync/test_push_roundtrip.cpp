// The transport-free pieces end to end, as the transfer pipeline will drive them: scan the local
// tree, plan against the manifest and a scan of the "remote" (a second local directory), apply
// the plan with the agent's FileWriter (whole files and deltas), record the manifest, and check
// the remote now scans identical to the local tree. Then edit, delete, chmod and retarget on the
// local side and sync again; then change a file behind ferry's back and see a conflict.
#define BOOST_TEST_MODULE push_roundtrip
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "helper/sync/planner.hpp"
#include "helper/sync/scanner.hpp"
#include "protocol/delta/delta.hpp"
#include "remote-runtime/agent/sync/file_writer.hpp"
#include "remote-runtime/agent/sync/tree_listing.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::sync;
namespace fs = std::filesystem;
using ferry::test::TempDir;
namespace agent = ferry::agent::sync;
using Buf = std::vector<std::uint8_t>;

namespace {

void write(const fs::path& p, const Buf& content) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(content.data()),
                                           static_cast<std::streamsize>(content.size()));
}
Buf text(const std::string& s) { return Buf(s.begin(), s.end()); }
Buf slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Buf(std::istreambuf_iterator<char>(in), {});
}

TreeState scan(const fs::path& root) {
  auto r = scan_tree(root, IgnoreMatcher::for_tree(root, {}), nullptr);
  BOOST_REQUIRE(r.has_value());
  BOOST_REQUIRE(r->unstable.empty());
  return r->entries;
}

// What the agent would report: its listing, converted to the planner's type. Files the helper
// has no record of are hashed so identical ones can be adopted.
TreeState remote_state(const agent::FileWriter& w, const Manifest& m) {
  agent::ListOptions opt;
  opt.hash_if = [&](const std::string& p) { return !m.entries.contains(p); };
  auto listing = agent::list_tree(w, opt);
  BOOST_REQUIRE(listing.has_value());
  TreeState out;
  for (auto& e : *listing) {
    out[e.path] = FileMeta{static_cast<EntryKind>(e.kind), e.mode, e.size, e.mtime_ns, e.hash, e.link_target};
  }
  return out;
}

// Applies a plan the way the transfer pipeline will, recording each success in the manifest.
void apply(const Plan& plan, const fs::path& local, const TreeState& scanned, agent::FileWriter& w, Manifest& m,
           std::uint64_t& delta_bytes) {
  auto attrs = [](const FileMeta& f) {
    return agent::FileAttrs{f.size, *f.hash, f.mode, f.mtime_ns};
  };
  for (const auto& p : plan.replace) BOOST_REQUIRE(w.remove(p).has_value());
  for (const auto& d : plan.mkdirs) {
    BOOST_REQUIRE(w.make_dirs(d, scanned.at(d).mode).has_value());
    m.record(d, scanned.at(d));
  }
  for (const auto& t : plan.send_whole) {
    const Buf content = slurp(local / t.path);
    BOOST_REQUIRE(w.write_file(t.path, content, attrs(t.local)).has_value());
    m.record(t.path, t.local);
  }
  for (const auto& t : plan.send_delta) {
    // No helper-side copy of the old bytes here: ask the agent for a signature.
    auto sig = w.signature(t.path, std::nullopt);
    BOOST_REQUIRE(sig.has_value());
    auto view = ferry::delta::SignatureView::parse(*sig);
    BOOST_REQUIRE(view.has_value());
    Buf delta;
    BOOST_REQUIRE(ferry::delta::generate_delta(*view, slurp(local / t.path), delta).has_value());
    delta_bytes += sig->size() + delta.size();
    const agent::Precondition expect{true, t.remote_base->size, t.remote_base->mtime_ns};
    BOOST_REQUIRE(w.apply_delta(t.path, delta, attrs(t.local), expect).has_value());
    m.record(t.path, t.local);
  }
  for (const auto& t : plan.symlinks) {
    BOOST_REQUIRE(w.make_symlink(t.path, t.local.link_target).has_value());
    m.record(t.path, t.local);
  }
  for (const auto& t : plan.metadata) {
    BOOST_REQUIRE(w.set_attrs(t.path, t.local.mode, t.local.kind == EntryKind::file
                                                        ? std::optional(t.local.mtime_ns)
                                                        : std::nullopt)
                      .has_value());
    m.record(t.path, t.local);
  }
  for (const auto& p : plan.deletes) {
    BOOST_REQUIRE(w.remove(p).has_value());
    m.forget(p);
  }
  for (const auto& p : plan.rmdirs) {
    BOOST_REQUIRE(w.remove_dir(p).has_value());
    m.forget(p);
  }
  for (const auto& p : plan.adopted) m.record(p, scanned.at(p));
  for (const auto& p : plan.forget) m.forget(p);
}

// Directory mtimes change with their content on both sides independently: compare the rest.
void require_same_trees(TreeState a, TreeState b) {
  for (auto* t : {&a, &b}) {
    for (auto& [p, meta] : *t) {
      if (meta.kind != EntryKind::file) meta.mtime_ns = 0;
    }
  }
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  for (const auto& [p, meta] : a) {
    BOOST_TEST_CONTEXT(p) {
      BOOST_REQUIRE(b.contains(p));
      BOOST_TEST((meta == b.at(p)));
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(push_twice_then_detect_a_remote_edit) {
  TempDir t;
  const fs::path local = t.path() / "local", remote = t.path() / "remote";
  Buf big(600000);
  std::mt19937_64 rng(3);
  for (auto& b : big) b = static_cast<std::uint8_t>(rng());
  write(local / "train.py", text("import torch\n"));
  write(local / "run.sh", text("#!/bin/sh\npython train.py\n"));
  fs::permissions(local / "run.sh", fs::perms::owner_exec, fs::perm_options::add);
  write(local / "data/weights.bin", big);
  write(local / "old/stale.txt", text("bye"));
  fs::create_directories(local / "empty/nested");
  fs::create_symlink("train.py", local / "main.py");
  write(local / ".gitignore", text("*.pyc\n"));
  write(local / "cache.pyc", text("junk"));

  auto w = agent::FileWriter::open(remote);
  BOOST_REQUIRE(w.has_value());
  Manifest manifest;
  manifest.remote_root = remote.string();
  std::uint64_t delta_bytes = 0;

  TreeState l1 = scan(local);
  BOOST_TEST(!l1.contains("cache.pyc"));
  Plan p1 = plan_push(l1, manifest, remote_state(*w, manifest), {});
  BOOST_TEST(p1.conflicts.empty());
  BOOST_TEST(p1.send_delta.empty());
  apply(p1, local, l1, *w, manifest, delta_bytes);
  require_same_trees(l1, scan(remote));

  // Nothing changed: nothing to do.
  BOOST_TEST(plan_push(scan(local), manifest, remote_state(*w, manifest), {}).nothing_to_do());

  // Edit the big file by a byte, chmod, delete a dir, retarget the link, add a file.
  big[300000] ^= 1;
  write(local / "data/weights.bin", big);
  fs::permissions(local / "train.py", fs::perms::owner_exec, fs::perm_options::add);
  fs::remove_all(local / "old");
  fs::remove(local / "main.py");
  fs::create_symlink("run.sh", local / "main.py");
  write(local / "new/model.py", text("class Net: pass\n"));

  TreeState l2 = scan(local);
  Plan p2 = plan_push(l2, manifest, remote_state(*w, manifest), {});
  BOOST_TEST(p2.conflicts.empty());
  BOOST_REQUIRE(p2.send_delta.size() == 1u);
  BOOST_TEST(p2.deletes == std::vector<std::string>{"old/stale.txt"});
  BOOST_TEST(p2.rmdirs == std::vector<std::string>{"old"});
  apply(p2, local, l2, *w, manifest, delta_bytes);
  require_same_trees(l2, scan(remote));
  BOOST_TEST(delta_bytes < 20000u);  // signature + delta for a 600 kB file with a 1-byte edit

  // Someone edits a synced file on the box; the user edits it locally too: a conflict.
  write(remote / "train.py", text("import torch  # tuned on the box\n"));
  write(local / "train.py", text("import torch, numpy\n"));
  Plan p3 = plan_push(scan(local), manifest, remote_state(*w, manifest), {});
  BOOST_REQUIRE(p3.conflicts.size() == 1u);
  BOOST_TEST(p3.conflicts[0].path == "train.py");
  BOOST_TEST((slurp(remote / "train.py") == text("import torch  # tuned on the box\n")));
}

BOOST_AUTO_TEST_CASE(agent_listing_matches_the_helper_scan_and_adopts_identical_files) {
  TempDir t;
  const fs::path local = t.path() / "local", remote = t.path() / "remote";
  for (const fs::path& root : {local, remote}) {
    write(root / "a/same.py", text("same\n"));
    write(root / "b.txt", text("b"));
    fs::create_symlink("a/same.py", root / "link");
    fs::create_directories(root / "e");
  }
  write(remote / "b.txt", text("B"));  // same size, different content
  write(remote / ".ferry-tmp.b.txt.0123", text("left over"));
  auto w = agent::FileWriter::open(remote);
  BOOST_REQUIRE(w.has_value());

  // Without hashes the listing carries exactly what the helper's scan records.
  auto listing = agent::list_tree(*w);
  BOOST_REQUIRE(listing.has_value());
  TreeState scanned = scan(remote);
  BOOST_TEST(!scanned.contains(".ferry-tmp.b.txt.0123"));  // neither the scan nor the agent lists temp files
  BOOST_REQUIRE_EQUAL(listing->size(), scanned.size());
  for (const auto& e : *listing) {
    BOOST_TEST_CONTEXT(e.path) {
      BOOST_REQUIRE(scanned.contains(e.path));
      const FileMeta& s = scanned.at(e.path);
      BOOST_TEST((static_cast<EntryKind>(e.kind) == s.kind));
      BOOST_TEST(e.mode == s.mode);
      BOOST_TEST(e.size == s.size);
      BOOST_TEST(e.mtime_ns == s.mtime_ns);
      BOOST_TEST(e.link_target == s.link_target);
    }
  }

  // First sync into the populated directory: identical files adopted, the different one flagged.
  Manifest m;
  const Plan p = plan_push(scan(local), m, remote_state(*w, m), {});
  BOOST_TEST(p.send_whole.empty());
  BOOST_REQUIRE(p.conflicts.size() == 1u);
  BOOST_TEST(p.conflicts[0].path == "b.txt");
  BOOST_TEST((p.conflicts[0].kind == ConflictKind::untracked_remote));
  BOOST_TEST((std::find(p.adopted.begin(), p.adopted.end(), "a/same.py") != p.adopted.end()));
  BOOST_TEST((std::find(p.adopted.begin(), p.adopted.end(), "link") != p.adopted.end()));

  agent::ListOptions prune;
  prune.prune = [](const std::string& path) { return path == "a"; };
  auto pruned = agent::list_tree(*w, prune);
  BOOST_REQUIRE(pruned.has_value());
  for (const auto& e : *pruned) BOOST_TEST(!e.path.starts_with("a"));
}

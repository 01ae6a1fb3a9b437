// The agent's sync writer on a real temp root: atomic verified writes, deltas and signatures,
// preconditions, path and symlink containment, and processes killed (SIGKILL, via fork) at each
// step of a write leaving the old or the new file, never a torn one.
#define BOOST_TEST_MODULE file_writer
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <span>

#include "protocol/delta/delta.hpp"
#include "remote-runtime/agent/sync/file_writer.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::agent::sync;
namespace fs = std::filesystem;
using Buf = std::vector<std::uint8_t>;

namespace {

using ferry::test::TempDir;

Buf bytes_of(const std::string& s) { return Buf(s.begin(), s.end()); }

using ferry::test::random_bytes;

Buf slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Buf(std::istreambuf_iterator<char>(in), {});
}

FileAttrs attrs_for(const Buf& content, std::uint32_t mode = 0644, std::int64_t mtime = 1'700'000'000'123'456'789) {
  return FileAttrs{content.size(), ferry::delta::hash128(content), mode, mtime};
}

std::size_t temp_files_in(const fs::path& dir) {
  std::size_t n = 0;
  for (auto& de : fs::recursive_directory_iterator(dir)) {
    if (de.path().filename().string().starts_with(kTempPrefix)) ++n;
  }
  return n;
}

FileWriter open_writer(const fs::path& root) {
  auto w = FileWriter::open(root);
  BOOST_REQUIRE_MESSAGE(w.has_value(), (w ? "" : w.error().message));
  return std::move(*w);
}

}  // namespace

BOOST_AUTO_TEST_CASE(writes_files_with_mode_mtime_and_parents) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  const Buf content = bytes_of("#!/bin/sh\necho hi\n");
  auto ok = w.write_file("a/b/run.sh", content, attrs_for(content, 0755));
  BOOST_REQUIRE_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message));
  const fs::path f = w.root() / "a/b/run.sh";
  BOOST_TEST((slurp(f) == content));
  struct stat st {};
  BOOST_REQUIRE(::stat(f.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 07777) == 0755u);
  BOOST_TEST(st.st_mtim.tv_sec == 1'700'000'000);
  BOOST_TEST(st.st_mtim.tv_nsec == 123'456'789);
  BOOST_TEST(temp_files_in(w.root()) == 0u);

  // Empty files and overwrites.
  BOOST_REQUIRE(w.write_file("a/empty", {}, attrs_for({})).has_value());
  BOOST_TEST(fs::file_size(w.root() / "a/empty") == 0u);
  const Buf v2 = bytes_of("v2");
  BOOST_REQUIRE(w.write_file("a/b/run.sh", v2, attrs_for(v2, 0700)).has_value());
  BOOST_TEST((slurp(f) == v2));
}

BOOST_AUTO_TEST_CASE(bytes_that_do_not_match_the_hash_are_never_installed) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  const Buf old = bytes_of("old");
  BOOST_REQUIRE(w.write_file("f", old, attrs_for(old)).has_value());
  const Buf evil = bytes_of("new!");
  FileAttrs lie = attrs_for(bytes_of("news"));
  auto r = w.write_file("f", evil, lie);
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST((r.error().code == WriteErrc::hash_mismatch));
  BOOST_TEST((slurp(w.root() / "f") == old));
  BOOST_TEST(temp_files_in(w.root()) == 0u);
  // More bytes than announced are refused as they arrive.
  auto p = w.begin_file("g", attrs_for(bytes_of("ab")));
  BOOST_REQUIRE(p.has_value());
  BOOST_TEST(!p->write(bytes_of("abc")).has_value());
  p->abort();
  BOOST_TEST(!fs::exists(w.root() / "g"));
  BOOST_TEST(temp_files_in(w.root()) == 0u);
}

BOOST_AUTO_TEST_CASE(deltas_apply_against_the_existing_file) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  const Buf base = random_bytes(300000, 1);
  BOOST_REQUIRE(w.write_file("data/model.bin", base, attrs_for(base)).has_value());
  Buf next = base;
  next[150000] ^= 0xff;
  next.insert(next.begin() + 1000, {9, 9, 9});
  // The agent path: signature from the remote file, delta made by the helper.
  auto sig = w.signature("data/model.bin", std::nullopt);
  BOOST_REQUIRE(sig.has_value());
  auto view = ferry::delta::SignatureView::parse(*sig);
  BOOST_REQUIRE(view.has_value());
  Buf delta;
  auto stats = ferry::delta::generate_delta(*view, next, delta);
  BOOST_REQUIRE(stats.has_value());
  BOOST_TEST(delta.size() < 5000u);
  auto ok = w.apply_delta("data/model.bin", delta, attrs_for(next));
  BOOST_REQUIRE_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message));
  BOOST_TEST((slurp(w.root() / "data/model.bin") == next));

  // A delta made for another base is rejected and the file stays as it is.
  Buf other_delta;
  BOOST_REQUIRE(ferry::delta::generate_delta_from_base(base, random_bytes(100, 2), 512, other_delta).has_value());
  auto bad = w.apply_delta("data/model.bin", other_delta, attrs_for(random_bytes(100, 2)));
  BOOST_REQUIRE(!bad.has_value());
  BOOST_TEST((bad.error().code == WriteErrc::bad_delta));
  BOOST_TEST((slurp(w.root() / "data/model.bin") == next));
  BOOST_TEST(temp_files_in(w.root()) == 0u);
}

// Deltas of every shape rebuild the file byte for byte, through the kernel copy (the real
// copy_file_range) and through the read/write fallback (copy_file_range refused with EXDEV, as
// across file systems).
BOOST_AUTO_TEST_CASE(deltas_of_every_shape_are_byte_exact_with_and_without_kernel_copies) {
  TempDir t("ferry-writer");
  const Buf base = random_bytes((3u << 20) + 4321, 31);  // not a multiple of any block size
  const std::size_t n = base.size();
  std::vector<std::pair<std::string, Buf>> cases;
  auto edited = [&](std::size_t at) {
    Buf b = base;
    b[at] ^= 0x41;
    return b;
  };
  cases.emplace_back("1 byte at the start", edited(0));
  cases.emplace_back("1 byte in the middle", edited(n / 2 + 17));
  cases.emplace_back("1 byte at the end", edited(n - 1));
  {
    Buf b = random_bytes(1u << 20, 32);
    b.insert(b.end(), base.begin(), base.end());
    cases.emplace_back("1 MiB inserted at the start", std::move(b));
  }
  {
    Buf b = base;
    b.insert(b.begin() + static_cast<std::ptrdiff_t>(n / 3), {1, 2, 3, 4, 5, 6, 7});
    cases.emplace_back("7 bytes inserted in the middle", std::move(b));
  }
  {
    Buf b = base;
    b.erase(b.begin() + 1000, b.begin() + 70000);
    cases.emplace_back("69000 bytes deleted near the start", std::move(b));
  }
  {
    Buf b = base;
    b.resize(n - 3000);
    b.insert(b.end(), {9, 9});
    cases.emplace_back("truncated, then a short tail", std::move(b));
  }
  cases.emplace_back("emptied", Buf{});
  for (bool refuse : {false, true}) {
    for (const auto& [what, next] : cases) {
      BOOST_TEST_CONTEXT(what << (refuse ? ", copy_file_range refused" : "")) {
        FileWriter w = open_writer(t.path() / "root");
        int kernel_calls = 0;
        if (refuse)
          w.set_kernel_copy([&](int, std::uint64_t, int, std::uint64_t, std::size_t) -> ssize_t {
            ++kernel_calls;
            errno = EXDEV;
            return -1;
          });
        BOOST_REQUIRE(w.write_file("m.bin", base, attrs_for(base)).has_value());
        Buf delta;
        auto stats = ferry::delta::generate_delta_from_base(base, next, 0, delta);
        BOOST_REQUIRE(stats.has_value());
        auto ok = w.apply_delta("m.bin", delta, attrs_for(next));
        BOOST_REQUIRE_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message));
        BOOST_TEST((slurp(w.root() / "m.bin") == next));
        BOOST_TEST(temp_files_in(w.root()) == 0u);
        // Refused once, the kernel copy is not asked again for the same file.
        if (refuse) BOOST_TEST(kernel_calls == (stats->copy_ops > 0 ? 1 : 0));
      }
    }
  }
}

// A delta that lies (a COPY past the old file, an output longer than announced, a header for
// another file) is refused before anything is installed.
BOOST_AUTO_TEST_CASE(hostile_deltas_leave_the_old_file) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  const Buf base = random_bytes(200000, 41);
  BOOST_REQUIRE(w.write_file("m.bin", base, attrs_for(base)).has_value());
  Buf next = base;
  next[5] ^= 1;
  Buf good;
  BOOST_REQUIRE(ferry::delta::generate_delta_from_base(base, next, 0, good).has_value());
  // Another file announced than the delta builds.
  auto r = w.apply_delta("m.bin", good, attrs_for(random_bytes(200000, 42)));
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST((r.error().code == WriteErrc::bad_delta));
  // A hand-made delta: header for `next`, then one COPY reaching past the old file's end.
  Buf evil(good.begin(), good.begin() + ferry::delta::kDeltaHeaderSize);
  evil.push_back(ferry::delta::kOpCopy);
  ferry::delta::wire::put_varint(evil, 100000);
  ferry::delta::wire::put_varint(evil, 150000);
  evil.push_back(ferry::delta::kOpEnd);
  r = w.apply_delta("m.bin", evil, attrs_for(next));
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST((r.error().code == WriteErrc::bad_delta));
  // Copies that add up to the right size but the wrong bytes: the whole-file hash refuses them.
  Buf shuffled(good.begin(), good.begin() + ferry::delta::kDeltaHeaderSize);
  shuffled.push_back(ferry::delta::kOpCopy);
  ferry::delta::wire::put_varint(shuffled, 100000);
  ferry::delta::wire::put_varint(shuffled, 100000);
  shuffled.push_back(ferry::delta::kOpCopy);
  ferry::delta::wire::put_varint(shuffled, 0);
  ferry::delta::wire::put_varint(shuffled, 100000);
  shuffled.push_back(ferry::delta::kOpEnd);
  r = w.apply_delta("m.bin", shuffled, attrs_for(next));
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST((r.error().code == WriteErrc::hash_mismatch));
  BOOST_TEST((slurp(w.root() / "m.bin") == base));
  BOOST_TEST(temp_files_in(w.root()) == 0u);
}

BOOST_AUTO_TEST_CASE(preconditions_catch_remote_changes) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  const Buf v1 = bytes_of("one");
  BOOST_REQUIRE(w.write_file("f", v1, attrs_for(v1, 0644, 1'000'000'000'000)).has_value());
  const Buf v2 = bytes_of("two!");
  auto conflict = w.write_file("f", v2, attrs_for(v2), Precondition{true, 3, 999});
  BOOST_REQUIRE(!conflict.has_value());
  BOOST_TEST((conflict.error().code == WriteErrc::conflict));
  BOOST_TEST((slurp(w.root() / "f") == v1));
  BOOST_TEST(w.write_file("f", v2, attrs_for(v2), Precondition{true, 3, 1'000'000'000'000}).has_value());
  BOOST_TEST(!w.write_file("new", v2, attrs_for(v2), Precondition{true, 3, 1}).has_value());
  BOOST_TEST(w.write_file("new", v2, attrs_for(v2), Precondition{false, 0, 0}).has_value());
}

BOOST_AUTO_TEST_CASE(paths_and_symlinks_cannot_escape_the_root) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  fs::create_directories(t.path() / "outside");
  std::ofstream(t.path() / "outside/victim") << "safe";
  fs::create_symlink(t.path() / "outside", w.root() / "escape");
  fs::create_symlink(t.path() / "outside/victim", w.root() / "victim_link");
  const Buf x = bytes_of("x");
  for (const char* bad : {"../x", "/etc/x", "a/../../x", "escape/victim", "escape/new", ".ferry-tmp.f.1"}) {
    auto r = w.write_file(bad, x, attrs_for(x));
    BOOST_TEST_CONTEXT(bad) { BOOST_TEST(!r.has_value()); }
  }
  BOOST_TEST(!w.make_dirs("escape/sub").has_value());
  BOOST_TEST(!w.apply_delta("victim_link", {}, attrs_for(x)).has_value());
  BOOST_TEST(!w.signature("victim_link", std::nullopt).has_value());
  BOOST_TEST(!w.set_attrs("escape/victim", 0777, std::nullopt).has_value());
  BOOST_TEST(!fs::exists(t.path() / "outside/new"));
  BOOST_TEST((slurp(t.path() / "outside/victim") == bytes_of("safe")));
  // Writing over a symlink replaces the link itself.
  BOOST_REQUIRE(w.write_file("victim_link", x, attrs_for(x)).has_value());
  BOOST_TEST(!fs::is_symlink(w.root() / "victim_link"));
  BOOST_TEST((slurp(t.path() / "outside/victim") == bytes_of("safe")));
  // Deleting a symlink never touches its target.
  BOOST_REQUIRE(w.remove("escape").has_value());
  BOOST_TEST(fs::exists(t.path() / "outside/victim"));
}

BOOST_AUTO_TEST_CASE(symlinks_dirs_and_deletes) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  BOOST_REQUIRE(w.make_dirs("x/y/z", 0750).has_value());
  BOOST_TEST(fs::is_directory(w.root() / "x/y/z"));
  struct stat dst {};
  BOOST_REQUIRE(::stat((w.root() / "x/y/z").c_str(), &dst) == 0);
  BOOST_TEST((dst.st_mode & 07777) == 0750u);
  BOOST_REQUIRE(w.make_dirs("x/y/z").has_value());  // idempotent
  BOOST_REQUIRE(w.make_symlink("x/link", "y/z").has_value());
  BOOST_TEST(fs::read_symlink(w.root() / "x/link") == "y/z");
  BOOST_REQUIRE(w.make_symlink("x/link", "../elsewhere").has_value());  // retarget atomically
  BOOST_TEST(fs::read_symlink(w.root() / "x/link") == "../elsewhere");
  BOOST_TEST(!w.make_symlink("x/y", "t").has_value());  // a directory is never replaced
  BOOST_REQUIRE(w.remove("x/link").has_value());
  BOOST_REQUIRE(w.remove("x/link").has_value());  // already gone: fine
  BOOST_TEST(!w.remove("x/y").has_value());        // directories need remove_dir
  BOOST_TEST(!w.remove_dir("x/y").has_value());    // not empty
  BOOST_REQUIRE(w.remove_dir("x/y/z").has_value());
  BOOST_TEST(!fs::exists(w.root() / "x/y/z"));
  const Buf c = bytes_of("c");
  BOOST_REQUIRE(w.write_file("m", c, attrs_for(c)).has_value());
  BOOST_REQUIRE(w.set_attrs("m", 0600, 5'000'000'000).has_value());
  struct stat st {};
  BOOST_REQUIRE(::stat((w.root() / "m").c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 07777) == 0600u);
  BOOST_TEST(st.st_mtim.tv_sec == 5);
}

BOOST_AUTO_TEST_CASE(killed_mid_write_leaves_old_or_new_never_torn) {
  TempDir t("ferry-writer");
  const fs::path root = t.path() / "root";
  const Buf old_content = random_bytes(4u << 20, 10);
  const Buf new_content = random_bytes(4u << 20, 11);
  {
    FileWriter w = open_writer(root);
    BOOST_REQUIRE(w.write_file("ckpt/model.pt", old_content, attrs_for(old_content)).has_value());
  }
  // Two deltas: all literal (a new file), and mostly COPYs (a 1-byte edit: the kernel-copy path).
  Buf edited = old_content;
  edited[edited.size() / 2] ^= 0x5a;
  Buf delta, copy_delta;
  BOOST_REQUIRE(ferry::delta::generate_delta_from_base(old_content, new_content, 0, delta).has_value());
  BOOST_REQUIRE(ferry::delta::generate_delta_from_base(old_content, edited, 0, copy_delta).has_value());
  for (int use_delta : {0, 1, 2}) {
    const Buf& target = use_delta == 2 ? edited : new_content;
    for (WriteStep kill_at : {WriteStep::temp_created, WriteStep::half_written, WriteStep::before_fsync,
                              WriteStep::before_rename, WriteStep::after_rename}) {
      BOOST_TEST_CONTEXT("delta=" << use_delta << " step=" << static_cast<int>(kill_at)) {
        // Start each round from the old file.
        {
          FileWriter w = open_writer(root);
          BOOST_REQUIRE(w.write_file("ckpt/model.pt", old_content, attrs_for(old_content)).has_value());
        }
        const pid_t pid = ::fork();
        BOOST_REQUIRE(pid >= 0);
        if (pid == 0) {
          auto w = FileWriter::open(root);
          if (!w) ::_exit(3);
          w->set_step_hook([kill_at](WriteStep s) {
            if (s == kill_at) ::raise(SIGKILL);
          });
          auto r = use_delta ? w->apply_delta("ckpt/model.pt", use_delta == 2 ? copy_delta : delta, attrs_for(target))
                             : w->write_file("ckpt/model.pt", new_content, attrs_for(new_content));
          ::_exit(r ? 0 : 4);
        }
        int status = 0;
        BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
        BOOST_TEST(WIFSIGNALED(status));  // the step was reached and the process died there
        BOOST_TEST(WTERMSIG(status) == SIGKILL);
        const Buf now = slurp(root / "ckpt/model.pt");
        const bool is_old = now == old_content, is_new = now == target;
        BOOST_TEST((is_old || is_new));
        BOOST_TEST(is_new == (kill_at == WriteStep::after_rename));
        // The next sync sweeps the leftover temp file and finishes the job.
        FileWriter w = open_writer(root);
        auto swept = w.sweep_temp_files();
        BOOST_REQUIRE(swept.has_value());
        BOOST_TEST(*swept == (kill_at == WriteStep::after_rename ? 0u : 1u));
        BOOST_REQUIRE(w.write_file("ckpt/model.pt", new_content, attrs_for(new_content)).has_value());
        BOOST_TEST((slurp(root / "ckpt/model.pt") == new_content));
        BOOST_TEST(temp_files_in(root) == 0u);
      }
    }
  }
}

// Streamed uploads with several chunks in flight: pieces at offsets, in any order.
BOOST_AUTO_TEST_CASE(pieces_at_offsets_in_any_order_reassemble_byte_identical) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  const Buf content = random_bytes(5'000'003, 21);
  // Uneven pieces, shuffled, so a piece often lands before the prefix it continues.
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  for (std::size_t at = 0, k = 0; at < content.size(); ++k) {
    const std::size_t n = std::min<std::size_t>(content.size() - at, 100'000 + (k * 37'011) % 900'000);
    pieces.emplace_back(at, n);
    at += n;
  }
  std::mt19937_64 rng(7);
  std::shuffle(pieces.begin(), pieces.end(), rng);
  BOOST_REQUIRE(pieces.front().first != 0);  // the shuffle really reorders
  auto p = w.begin_file("big/model.bin", attrs_for(content));
  BOOST_REQUIRE(p.has_value());
  for (const auto& [at, n] : pieces) {
    auto ok = p->write_at(at, std::span(content).subspan(at, n));
    BOOST_REQUIRE_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message));
  }
  BOOST_TEST(p->received() == content.size());
  auto done = p->commit();
  BOOST_REQUIRE_MESSAGE(done.has_value(), (done ? "" : done.error().message));
  BOOST_TEST((slurp(w.root() / "big/model.bin") == content));
  BOOST_TEST(temp_files_in(w.root()) == 0u);
}

// Bulk lanes: a second writer (another agent process) writes parts into the first one's temp
// file by name; the owner records them as placed and its commit verifies them like its own.
BOOST_AUTO_TEST_CASE(parts_written_by_a_sibling_writer_commit_byte_identical) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  FileWriter sibling = open_writer(t.path() / "root");
  const Buf content = random_bytes(3'000'001, 23);
  const Bytes all(content);
  auto p = w.begin_file("ckpt/model.bin", attrs_for(content));
  BOOST_REQUIRE(p.has_value());
  const std::string temp = p->temp_name();
  BOOST_TEST(temp.starts_with(kTempPrefix));
  // [1M, 3M) from the sibling, placed before the owner's own [0, 1M): read back for the hash.
  auto part = sibling.write_part("ckpt/model.bin", temp, 1'000'000, all.subspan(1'000'000));
  BOOST_REQUIRE_MESSAGE(part.has_value(), (part ? "" : part.error().message));
  BOOST_REQUIRE(p->mark_placed(1'000'000, 2'000'001).has_value());
  BOOST_TEST(!p->mark_placed(1'500'000, 10).has_value());  // overlaps: refused like write_at
  BOOST_REQUIRE(p->write_at(0, all.subspan(0, 1'000'000)).has_value());
  auto done = p->commit();
  BOOST_REQUIRE_MESSAGE(done.has_value(), (done ? "" : done.error().message));
  BOOST_TEST((slurp(w.root() / "ckpt/model.bin") == content));
  BOOST_TEST(temp_files_in(w.root()) == 0u);
}

BOOST_AUTO_TEST_CASE(a_sibling_part_that_differs_fails_the_commit_and_a_gone_temp_is_not_recreated) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  FileWriter sibling = open_writer(t.path() / "root");
  const Buf content = random_bytes(100'000, 24);
  Buf wrong = content;
  wrong[70'000] ^= 1;
  auto p = w.begin_file("f.bin", attrs_for(content));
  BOOST_REQUIRE(p.has_value());
  const std::string temp = p->temp_name();
  BOOST_REQUIRE(sibling.write_part("f.bin", temp, 50'000, Bytes(wrong).subspan(50'000)).has_value());
  BOOST_REQUIRE(p->mark_placed(50'000, 50'000).has_value());
  BOOST_REQUIRE(p->write_at(0, Bytes(content).subspan(0, 50'000)).has_value());
  auto done = p->commit();
  BOOST_REQUIRE(!done.has_value());
  BOOST_TEST((done.error().code == WriteErrc::hash_mismatch));
  BOOST_TEST(!fs::exists(w.root() / "f.bin"));
  // The temp file went with the failed commit: a late part must not bring it back.
  auto late = sibling.write_part("f.bin", temp, 0, bytes_of("x"));
  BOOST_TEST(!late.has_value());
  BOOST_TEST(temp_files_in(w.root()) == 0u);
  // Names that are not ferry temp files, or that leave the directory, are refused.
  for (std::string bad : {"f.bin", "../x", ".ferry-tmp./../../etc", "notes.txt"})
    BOOST_TEST(!sibling.write_part("f.bin", bad, 0, bytes_of("x")).has_value(), bad);
  BOOST_TEST(!fs::exists(w.root() / "f.bin"));
}

BOOST_AUTO_TEST_CASE(overlapping_or_out_of_range_pieces_are_refused) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  const Buf content = random_bytes(1000, 22);
  auto p = w.begin_file("f", attrs_for(content));
  BOOST_REQUIRE(p.has_value());
  const Bytes all(content);
  BOOST_REQUIRE(p->write_at(100, all.subspan(100, 200)).has_value());  // [100, 300)
  for (auto [at, n] : {std::pair<std::size_t, std::size_t>{0, 101}, {299, 10}, {150, 10}, {50, 400}, {100, 200}}) {
    BOOST_TEST_CONTEXT("piece at " << at << "+" << n) {
      auto r = p->write_at(at, all.subspan(at, n));
      BOOST_REQUIRE(!r.has_value());
      BOOST_TEST((r.error().code == WriteErrc::hash_mismatch));
    }
  }
  // Past the announced size, and an offset beyond it.
  BOOST_TEST(!p->write_at(990, bytes_of("0123456789ab")).has_value());
  BOOST_TEST(!p->write_at(1001, bytes_of("x")).has_value());
  BOOST_TEST(p->received() == 200u);  // refused pieces left nothing behind
  // Touching neighbours are fine, and the file still commits.
  BOOST_REQUIRE(p->write_at(0, all.subspan(0, 100)).has_value());
  BOOST_REQUIRE(p->write_at(300, all.subspan(300, 700)).has_value());
  auto done = p->commit();
  BOOST_REQUIRE_MESSAGE(done.has_value(), (done ? "" : done.error().message));
  BOOST_TEST((slurp(w.root() / "f") == content));
}

BOOST_AUTO_TEST_CASE(a_missing_range_fails_the_commit_and_installs_nothing) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  const Buf old = bytes_of("old");
  BOOST_REQUIRE(w.write_file("f", old, attrs_for(old)).has_value());
  const Buf content = random_bytes(3000, 23);
  const Bytes all(content);
  auto p = w.begin_file("f", attrs_for(content));
  BOOST_REQUIRE(p.has_value());
  BOOST_REQUIRE(p->write_at(0, all.subspan(0, 1000)).has_value());
  BOOST_REQUIRE(p->write_at(2000, all.subspan(2000, 1000)).has_value());
  auto r = p->commit();
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST((r.error().code == WriteErrc::hash_mismatch));
  BOOST_TEST(r.error().message.find("first missing byte at 1000") != std::string::npos, r.error().message);
  BOOST_TEST((slurp(w.root() / "f") == old));
  BOOST_TEST(temp_files_in(w.root()) == 0u);
  // Every byte there but one piece's content wrong: the whole-file hash still catches it.
  auto q = w.begin_file("f", attrs_for(content));
  BOOST_REQUIRE(q.has_value());
  Buf wrong(content.begin() + 1000, content.begin() + 2000);
  wrong[500] ^= 1;
  BOOST_REQUIRE(q->write_at(2000, all.subspan(2000, 1000)).has_value());
  BOOST_REQUIRE(q->write_at(1000, wrong).has_value());
  BOOST_REQUIRE(q->write_at(0, all.subspan(0, 1000)).has_value());
  auto r2 = q->commit();
  BOOST_REQUIRE(!r2.has_value());
  BOOST_TEST((r2.error().code == WriteErrc::hash_mismatch));
  BOOST_TEST((slurp(w.root() / "f") == old));
}

BOOST_AUTO_TEST_CASE(a_batch_writes_every_file_and_one_failure_fails_only_its_own) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  const Buf there = bytes_of("already here");
  BOOST_REQUIRE(w.write_file("b/conflict.txt", there, attrs_for(there)).has_value());
  std::vector<Buf> contents;
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) {
    contents.push_back(random_bytes(static_cast<std::size_t>(i * 97), 100 + i));
    names.push_back(std::string("d").append(std::to_string(i % 3)).append("/f").append(std::to_string(i)));
  }
  std::vector<BatchFile> batch;
  for (int i = 0; i < 40; ++i) batch.push_back({names[i], contents[i], attrs_for(contents[i], 0600), std::nullopt});
  const Buf mine = bytes_of("mine");
  batch.push_back({"b/conflict.txt", mine, attrs_for(mine), Precondition{false, 0, 0}});  // expects no file
  const Buf liar = bytes_of("liar");
  batch.push_back({"b/liar.txt", liar, attrs_for(bytes_of("LIAR")), std::nullopt});
  batch.push_back({"../escape", mine, attrs_for(mine), std::nullopt});
  auto results = w.write_batch(batch, 4);
  BOOST_REQUIRE(results.size() == batch.size());
  for (int i = 0; i < 40; ++i) {
    BOOST_TEST_CONTEXT(names[i]) {
      BOOST_TEST(results[i].has_value());
      BOOST_TEST((slurp(w.root() / names[i]) == contents[i]));
      struct stat st {};
      BOOST_REQUIRE(::stat((w.root() / names[i]).c_str(), &st) == 0);
      BOOST_TEST((st.st_mode & 07777) == 0600u);
      BOOST_TEST(st.st_mtim.tv_nsec == 123'456'789);
    }
  }
  BOOST_REQUIRE(!results[40].has_value());
  BOOST_TEST((results[40].error().code == WriteErrc::conflict));
  BOOST_TEST((slurp(w.root() / "b/conflict.txt") == there));
  BOOST_REQUIRE(!results[41].has_value());
  BOOST_TEST((results[41].error().code == WriteErrc::hash_mismatch));
  BOOST_TEST(!fs::exists(w.root() / "b/liar.txt"));
  BOOST_REQUIRE(!results[42].has_value());
  BOOST_TEST((results[42].error().code == WriteErrc::invalid_path));
  BOOST_TEST(temp_files_in(w.root()) == 0u);
}

// A batch opens each directory once and shares it among its files (deepest opened prefix
// first): nested and sibling directories still land where their paths say, and a symlink or a
// file in the chain is refused for every file under it, whichever file reached it first.
BOOST_AUTO_TEST_CASE(a_batch_shares_directories_without_leaving_the_root) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  fs::create_directories(t.path() / "outside");
  fs::create_symlink(t.path() / "outside", w.root() / "link");
  const Buf there = bytes_of("a file, not a directory");
  BOOST_REQUIRE(w.write_file("plain", there, attrs_for(there)).has_value());
  const std::vector<std::string> names = {"top.txt", "a/x", "a/b/c/deep", "a/y", "a/b/z", "a/b/c/deeper",
                                          "a/bb/w", "ab/v", "link/escape", "link/sub/escape", "plain/under",
                                          "a/b/c/d/e/f"};
  std::vector<Buf> contents;
  for (std::size_t i = 0; i < names.size(); ++i) contents.push_back(random_bytes(100 + i, 300 + i));
  std::vector<BatchFile> batch;
  for (std::size_t i = 0; i < names.size(); ++i) batch.push_back({names[i], contents[i], attrs_for(contents[i]), std::nullopt});
  for (unsigned threads : {1u, 4u}) {
    auto results = w.write_batch(batch, threads);
    BOOST_REQUIRE(results.size() == names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
      BOOST_TEST_CONTEXT(names[i] << " with " << threads << " threads") {
        const bool escapes = names[i].starts_with("link/") || names[i].starts_with("plain/");
        if (escapes) {
          BOOST_REQUIRE(!results[i].has_value());
          BOOST_TEST((results[i].error().code == WriteErrc::invalid_path));
        } else {
          BOOST_TEST(results[i].has_value());
          BOOST_TEST((slurp(w.root() / names[i]) == contents[i]));
        }
      }
    }
    BOOST_TEST(fs::is_empty(t.path() / "outside"));
    BOOST_TEST((slurp(w.root() / "plain") == there));
    BOOST_TEST(temp_files_in(w.root()) == 0u);
  }
}

// A directory renamed out of the root while a batch writes into it (here between writing and
// fsyncing the temp files) receives none of the batch's files: each directory is walked again
// from the root before the renames. Files elsewhere in the batch land as usual.
BOOST_AUTO_TEST_CASE(a_directory_moved_out_of_the_root_mid_batch_gets_nothing) {
  for (unsigned threads : {1u, 4u}) {
    TempDir t("ferry-writer");
    FileWriter w = open_writer(t.path() / "root");
    fs::create_directories(t.path() / "outside");
    const Buf one = bytes_of("one"), two = bytes_of("two"), three = bytes_of("three");
    std::vector<BatchFile> batch{{"sub/deep/a", one, attrs_for(one), std::nullopt},
                                 {"sub/deep/b", two, attrs_for(two), std::nullopt},
                                 {"other/c", three, attrs_for(three), std::nullopt}};
    bool moved = false;
    w.set_step_hook([&](WriteStep s) {
      if (s == WriteStep::before_fsync && !moved) {
        fs::rename(w.root() / "sub", t.path() / "outside/sub");
        moved = true;
      }
    });
    auto results = w.write_batch(batch, threads);
    BOOST_TEST_CONTEXT(threads << " threads") {
      BOOST_REQUIRE(moved);
      BOOST_REQUIRE(results.size() == 3u);
      for (int i : {0, 1}) {
        BOOST_REQUIRE(!results[i].has_value());
        BOOST_TEST((results[i].error().code == WriteErrc::invalid_path));
      }
      BOOST_TEST(results[2].has_value());
      BOOST_TEST((slurp(w.root() / "other/c") == three));
      BOOST_TEST(fs::is_empty(t.path() / "outside/sub/deep"));  // no final name, no temp file
    }
  }
}

BOOST_AUTO_TEST_CASE(a_batch_killed_at_any_step_leaves_every_file_old_or_new) {
  TempDir t("ferry-writer");
  const fs::path root = t.path() / "root";
  constexpr int kFiles = 12;
  std::vector<Buf> olds, news;
  std::vector<std::string> names;
  for (int i = 0; i < kFiles; ++i) {
    names.push_back(std::string("p").append(std::to_string(i % 4)).append("/m").append(std::to_string(i)).append(".py"));
    olds.push_back(random_bytes(3000 + static_cast<std::size_t>(i) * 1000, 200 + i));
    // Some new files span several 1 MiB chunks, so "half written" falls inside one.
    news.push_back(random_bytes(i % 5 == 0 ? (3u << 20) + 17 : 2000 + static_cast<std::size_t>(i) * 500, 300 + i));
  }
  auto write_old = [&] {
    FileWriter w = open_writer(root);
    for (int i = 0; i < kFiles; ++i) BOOST_REQUIRE(w.write_file(names[i], olds[i], attrs_for(olds[i])).has_value());
  };
  for (WriteStep kill_at : {WriteStep::temp_created, WriteStep::half_written, WriteStep::before_fsync,
                            WriteStep::before_rename, WriteStep::after_rename}) {
    // after_rename: the Nth rename (the kill point moves through the batch).
    for (int nth : {1, kFiles / 2, kFiles}) {
      if (kill_at != WriteStep::after_rename && kill_at != WriteStep::before_rename && nth != 1) continue;
      BOOST_TEST_CONTEXT("step=" << static_cast<int>(kill_at) << " nth=" << nth) {
        write_old();
        const pid_t pid = ::fork();
        BOOST_REQUIRE(pid >= 0);
        if (pid == 0) {
          auto w = FileWriter::open(root);
          if (!w) ::_exit(3);
          auto seen = std::make_shared<std::atomic<int>>(0);
          w->set_step_hook([kill_at, nth, seen](WriteStep s) {
            if (s == kill_at && ++*seen == nth) ::raise(SIGKILL);
          });
          std::vector<BatchFile> batch;
          for (int i = 0; i < kFiles; ++i) batch.push_back({names[i], news[i], attrs_for(news[i]), std::nullopt});
          auto results = w->write_batch(batch, 4);
          ::_exit(3);
        }
        int status = 0;
        BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
        BOOST_TEST(WIFSIGNALED(status));
        int n_new = 0;
        for (int i = 0; i < kFiles; ++i) {
          const Buf now = slurp(root / names[i]);
          const bool is_old = now == olds[i], is_new = now == news[i];
          BOOST_TEST((is_old || is_new), names[i] << " is torn");
          n_new += is_new;
        }
        // Nothing is renamed before every temp file is written and synced; the Nth rename
        // leaves exactly N new files.
        BOOST_TEST(n_new == (kill_at == WriteStep::after_rename ? nth : kill_at == WriteStep::before_rename ? nth - 1 : 0));
        FileWriter w = open_writer(root);
        auto swept = w.sweep_temp_files();
        BOOST_REQUIRE(swept.has_value());
        BOOST_TEST(temp_files_in(root) == 0u);
      }
    }
  }
}

// sync/signature of a big file is made from a mapping on several threads, of a small range by
// reads: both byte for byte the signature computed in memory.
BOOST_AUTO_TEST_CASE(signatures_from_a_mapping_and_from_reads_equal_the_in_memory_ones) {
  TempDir t("ferry-writer");
  FileWriter w = open_writer(t.path() / "root");
  const Buf content = random_bytes((20u << 20) + 12345, 51);
  BOOST_REQUIRE(w.write_file("big.bin", content, attrs_for(content)).has_value());
  const ferry::delta::SignatureParams coarse{1u << 20, 8}, fine{1024, 8};
  auto whole = w.signature("big.bin", coarse);
  BOOST_REQUIRE(whole.has_value());
  Buf expect;
  BOOST_REQUIRE(ferry::delta::write_signature(content, 0, content.size(), coarse, expect).has_value());
  BOOST_TEST((*whole == expect));
  auto part = w.signature("big.bin", fine, std::pair<std::uint64_t, std::uint64_t>{3'000'000, 1u << 20});
  BOOST_REQUIRE(part.has_value());
  Buf expect_part;
  BOOST_REQUIRE(ferry::delta::write_signature(std::span(content).subspan(3'000'000, 1u << 20), 3'000'000, content.size(), fine,
                                              expect_part)
                    .has_value());
  BOOST_TEST((*part == expect_part));
}

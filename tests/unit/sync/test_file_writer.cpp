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
#include <random>

#include "protocol/delta/delta.hpp"
#include "remote-runtime/agent/sync/file_writer.hpp"

using namespace ferry::agent::sync;
namespace fs = std::filesystem;
using Buf = std::vector<std::uint8_t>;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ferry-writer-XXXXXX").string();
    BOOST_REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

Buf bytes_of(const std::string& s) { return Buf(s.begin(), s.end()); }

Buf random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Buf b(n);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  return b;
}

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
  TempDir t;
  FileWriter w = open_writer(t.path / "root");
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
  TempDir t;
  FileWriter w = open_writer(t.path / "root");
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
  TempDir t;
  FileWriter w = open_writer(t.path / "root");
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

BOOST_AUTO_TEST_CASE(preconditions_catch_remote_changes) {
  TempDir t;
  FileWriter w = open_writer(t.path / "root");
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
  TempDir t;
  FileWriter w = open_writer(t.path / "root");
  fs::create_directories(t.path / "outside");
  std::ofstream(t.path / "outside/victim") << "safe";
  fs::create_symlink(t.path / "outside", w.root() / "escape");
  fs::create_symlink(t.path / "outside/victim", w.root() / "victim_link");
  const Buf x = bytes_of("x");
  for (const char* bad : {"../x", "/etc/x", "a/../../x", "escape/victim", "escape/new", ".ferry-tmp.f.1"}) {
    auto r = w.write_file(bad, x, attrs_for(x));
    BOOST_TEST_CONTEXT(bad) { BOOST_TEST(!r.has_value()); }
  }
  BOOST_TEST(!w.make_dirs("escape/sub").has_value());
  BOOST_TEST(!w.apply_delta("victim_link", {}, attrs_for(x)).has_value());
  BOOST_TEST(!w.signature("victim_link", std::nullopt).has_value());
  BOOST_TEST(!w.set_attrs("escape/victim", 0777, std::nullopt).has_value());
  BOOST_TEST(!fs::exists(t.path / "outside/new"));
  BOOST_TEST((slurp(t.path / "outside/victim") == bytes_of("safe")));
  // Writing over a symlink replaces the link itself.
  BOOST_REQUIRE(w.write_file("victim_link", x, attrs_for(x)).has_value());
  BOOST_TEST(!fs::is_symlink(w.root() / "victim_link"));
  BOOST_TEST((slurp(t.path / "outside/victim") == bytes_of("safe")));
  // Deleting a symlink never touches its target.
  BOOST_REQUIRE(w.remove("escape").has_value());
  BOOST_TEST(fs::exists(t.path / "outside/victim"));
}

BOOST_AUTO_TEST_CASE(symlinks_dirs_and_deletes) {
  TempDir t;
  FileWriter w = open_writer(t.path / "root");
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
  TempDir t;
  const fs::path root = t.path / "root";
  const Buf old_content = random_bytes(4u << 20, 10);
  const Buf new_content = random_bytes(4u << 20, 11);
  {
    FileWriter w = open_writer(root);
    BOOST_REQUIRE(w.write_file("ckpt/model.pt", old_content, attrs_for(old_content)).has_value());
  }
  Buf delta;
  BOOST_REQUIRE(ferry::delta::generate_delta_from_base(old_content, new_content, 0, delta).has_value());
  for (bool use_delta : {false, true}) {
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
          auto r = use_delta ? w->apply_delta("ckpt/model.pt", delta, attrs_for(new_content))
                             : w->write_file("ckpt/model.pt", new_content, attrs_for(new_content));
          ::_exit(r ? 0 : 4);
        }
        int status = 0;
        BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
        BOOST_TEST(WIFSIGNALED(status));  // the step was reached and the process died there
        BOOST_TEST(WTERMSIG(status) == SIGKILL);
        const Buf now = slurp(root / "ckpt/model.pt");
        const bool is_old = now == old_content, is_new = now == new_content;
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

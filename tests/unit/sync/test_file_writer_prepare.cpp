// FileWriter::prepare_delta_base on a real temp root: deltas of every shape land byte-exact in a
// prepared copy (through the real copy_file_range and the read/write fallback); a copy of a file
// that changed since is not used; a copy whose bytes are not the old file's fails the whole-file
// hash and installs nothing; what prepare refuses; unused copies leave no temp file behind; a
// process killed mid-copy or mid-apply leaves the old file and a temp the next sweep removes.
#define BOOST_TEST_MODULE file_writer_prepare
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "protocol/delta/delta.hpp"
#include "remote-runtime/agent/sync/file_writer.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::agent::sync;
namespace fs = std::filesystem;
using Buf = std::vector<std::uint8_t>;
using ferry::test::random_bytes;
using ferry::test::TempDir;

namespace {

Buf slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Buf(std::istreambuf_iterator<char>(in), {});
}

FileAttrs attrs_for(const Buf& content) { return FileAttrs{content.size(), ferry::delta::hash128(content), 0644, 1'700'000'000'123'456'789}; }

std::vector<fs::path> temp_files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (auto& de : fs::recursive_directory_iterator(dir))
    if (de.path().filename().string().starts_with(kTempPrefix)) out.push_back(de.path());
  return out;
}

FileWriter open_writer(const fs::path& root) {
  auto w = FileWriter::open(root);
  BOOST_REQUIRE_MESSAGE(w.has_value(), (w ? "" : w.error().message));
  return std::move(*w);
}

Precondition as_on_disk(const fs::path& p) {
  struct stat st {};
  BOOST_REQUIRE(::stat(p.c_str(), &st) == 0);
  return Precondition{true, static_cast<std::uint64_t>(st.st_size), st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec};
}

// The real copy_file_range, then the byte at `at` flipped in the copy: as if the old file had
// been written while being copied, in the same clock tick as the copy's stat (its times then
// show nothing). The files' sizes are not multiples of 4096, so no file system reflinks them
// instead of calling this.
FileWriter::KernelCopy copy_then_flip(std::uint64_t at) {
  return [at](int in, std::uint64_t in_at, int out, std::uint64_t out_at, std::size_t n) -> ssize_t {
    auto i = static_cast<off_t>(in_at), o = static_cast<off_t>(out_at);
    const ssize_t got = ::copy_file_range(in, &i, out, &o, n, 0);
    if (got > 0 && out_at <= at && at < out_at + static_cast<std::uint64_t>(got)) {
      unsigned char c = 0;
      if (::pread(out, &c, 1, static_cast<off_t>(at)) != 1) return -1;
      c ^= 0x10;
      if (::pwrite(out, &c, 1, static_cast<off_t>(at)) != 1) return -1;
    }
    return got;
  };
}

}  // namespace

BOOST_AUTO_TEST_CASE(deltas_of_every_shape_land_byte_exact_in_a_prepared_copy) {
  TempDir t("ferry-prepare");
  const Buf base = random_bytes((3u << 20) + 4321, 51);
  const std::size_t n = base.size();
  std::vector<std::pair<std::string, Buf>> cases;
  auto edited = [&](std::size_t at) {
    Buf b = base;
    b[at] ^= 0x41;
    return b;
  };
  cases.emplace_back(std::string("1 byte at the start"), edited(0));
  cases.emplace_back(std::string("1 byte in the middle"), edited(n / 2 + 17));
  cases.emplace_back(std::string("1 byte at the end"), edited(n - 1));
  cases.emplace_back(std::string("unchanged"), base);
  {
    Buf b = base;
    std::rotate(b.begin(), b.begin() + 1'000'000, b.end());  // same size, every range moved
    cases.emplace_back(std::string("rotated by 1000000 bytes"), std::move(b));
  }
  {
    Buf b = random_bytes(1u << 20, 52);
    b.insert(b.end(), base.begin(), base.end());
    cases.emplace_back(std::string("1 MiB inserted at the start"), std::move(b));
  }
  {
    Buf b = base;
    b.resize(n - 3000);
    b.insert(b.end(), {9, 9});
    cases.emplace_back(std::string("truncated, then a short tail"), std::move(b));
  }
  cases.emplace_back(std::string("emptied"), Buf{});
  for (bool refuse : {false, true}) {
    for (const auto& [what, next] : cases) {
      BOOST_TEST_CONTEXT(what << (refuse ? ", copy_file_range refused" : "")) {
        FileWriter w = open_writer(t.path() / "root");
        if (refuse)
          w.set_kernel_copy([](int, std::uint64_t, int, std::uint64_t, std::size_t) -> ssize_t {
            errno = EXDEV;
            return -1;
          });
        BOOST_REQUIRE(w.write_file("d/m.bin", base, attrs_for(base)).has_value());
        const Precondition expect = as_on_disk(w.root() / "d/m.bin");
        auto started = w.prepare_delta_base("d/m.bin", expect);
        BOOST_REQUIRE(started.has_value());
        BOOST_TEST(*started);
        Buf delta;
        BOOST_REQUIRE(ferry::delta::generate_delta_from_base(base, next, 0, delta).has_value());
        auto ok = w.apply_delta("d/m.bin", delta, attrs_for(next), expect);
        BOOST_REQUIRE_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message));
        BOOST_TEST((slurp(w.root() / "d/m.bin") == next));
        BOOST_TEST(w.prepared_used() == 1u);
        BOOST_TEST(temp_files_in(w.root()).empty());
      }
    }
  }
}

// Rewritten since the copy (another inode, or the same one with another mtime): the delta made
// against the new file is applied to it, not to the copy.
BOOST_AUTO_TEST_CASE(a_copy_of_a_file_changed_since_is_not_used) {
  TempDir t("ferry-prepare");
  FileWriter w = open_writer(t.path() / "root");
  const Buf first = random_bytes(2u << 20, 61), second = random_bytes(2u << 20, 62);
  BOOST_REQUIRE(w.write_file("m.bin", first, attrs_for(first)).has_value());
  BOOST_REQUIRE(w.prepare_delta_base("m.bin").value_or(false));
  BOOST_REQUIRE(w.write_file("m.bin", second, attrs_for(second)).has_value());  // renamed over
  Buf next = second, delta;
  next[12345] ^= 1;
  BOOST_REQUIRE(ferry::delta::generate_delta_from_base(second, next, 0, delta).has_value());
  auto ok = w.apply_delta("m.bin", delta, attrs_for(next));
  BOOST_REQUIRE_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message));
  BOOST_TEST((slurp(w.root() / "m.bin") == next));
  BOOST_TEST(w.prepared_used() == 0u);

  // Written in place after the copy: same inode, size and bytes, but a newer mtime.
  BOOST_REQUIRE(w.prepare_delta_base("m.bin").value_or(false));
  const timespec later[2] = {{0, UTIME_OMIT}, {1'800'000'000, 5}};
  BOOST_REQUIRE(::utimensat(AT_FDCWD, (w.root() / "m.bin").c_str(), later, 0) == 0);
  Buf again = next;
  again[7] ^= 1;
  delta.clear();
  BOOST_REQUIRE(ferry::delta::generate_delta_from_base(next, again, 0, delta).has_value());
  ok = w.apply_delta("m.bin", delta, attrs_for(again));
  BOOST_REQUIRE_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message));
  BOOST_TEST((slurp(w.root() / "m.bin") == again));
  BOOST_TEST(w.prepared_used() == 0u);
  BOOST_TEST(temp_files_in(w.root()).empty());
}

// A copy that is not the old file's bytes (a write in the same clock tick as the copy's stat
// leaves no trace in the file's times): the unmoved ranges are hashed from the copy itself, so
// the commit is refused and the old file stays.
BOOST_AUTO_TEST_CASE(a_copy_whose_bytes_differ_fails_the_hash_and_installs_nothing) {
  TempDir t("ferry-prepare");
  FileWriter w = open_writer(t.path() / "root");
  const Buf base = random_bytes((3u << 20) + 123, 71);
  BOOST_REQUIRE(w.write_file("m.bin", base, attrs_for(base)).has_value());
  w.set_kernel_copy(copy_then_flip(2'000'000));
  BOOST_REQUIRE(w.prepare_delta_base("m.bin").value_or(false));
  Buf next = base, delta;
  next[100] ^= 1;
  BOOST_REQUIRE(ferry::delta::generate_delta_from_base(base, next, 0, delta).has_value());
  auto r = w.apply_delta("m.bin", delta, attrs_for(next));
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST((r.error().code == WriteErrc::hash_mismatch));
  BOOST_TEST(w.prepared_used() == 1u);
  BOOST_TEST((slurp(w.root() / "m.bin") == base));
  BOOST_TEST(temp_files_in(w.root()).empty());
}

BOOST_AUTO_TEST_CASE(prepare_starts_nothing_for_what_is_not_the_planned_file) {
  TempDir t("ferry-prepare");
  FileWriter w = open_writer(t.path() / "root");
  const Buf base = random_bytes(100000, 81);
  BOOST_REQUIRE(w.write_file("m.bin", base, attrs_for(base)).has_value());
  BOOST_REQUIRE(w.make_dirs("dir").has_value());
  const Precondition on_disk = as_on_disk(w.root() / "m.bin");
  BOOST_TEST(w.prepare_delta_base("missing.bin").value_or(true) == false);
  BOOST_TEST(w.prepare_delta_base("dir").value_or(true) == false);
  BOOST_TEST(w.prepare_delta_base("m.bin", Precondition{true, on_disk.size + 1, on_disk.mtime_ns}).value_or(true) == false);
  BOOST_TEST(w.prepare_delta_base("m.bin", Precondition{true, on_disk.size, on_disk.mtime_ns + 1}).value_or(true) == false);
  BOOST_TEST(w.prepare_delta_base("m.bin", Precondition{false, 0, 0}).value_or(true) == false);
  auto escape = w.prepare_delta_base("../m.bin");
  BOOST_REQUIRE(!escape.has_value());
  BOOST_TEST((escape.error().code == WriteErrc::invalid_path));
  BOOST_TEST(temp_files_in(t.path()).empty());
}

// A second prepare of the same path replaces the first copy; a dropped one goes at once; the
// writer's end deletes the rest.
BOOST_AUTO_TEST_CASE(unused_copies_leave_no_temp_file) {
  TempDir t("ferry-prepare");
  const fs::path root = t.path() / "root";
  {
    FileWriter w = open_writer(root);
    const Buf a = random_bytes(1u << 20, 91), b = random_bytes(1u << 20, 92);
    BOOST_REQUIRE(w.write_file("a.bin", a, attrs_for(a)).has_value());
    BOOST_REQUIRE(w.write_file("sub/b.bin", b, attrs_for(b)).has_value());
    BOOST_REQUIRE(w.prepare_delta_base("a.bin").value_or(false));
    BOOST_REQUIRE(w.prepare_delta_base("a.bin").value_or(false));
    BOOST_REQUIRE(w.prepare_delta_base("sub/b.bin").value_or(false));
    BOOST_TEST(temp_files_in(root).size() == 2u);
    FileWriter moved = std::move(w);  // the copies go with the writer
    BOOST_TEST(temp_files_in(root).size() == 2u);
    moved.drop_prepared("sub/b.bin");  // the helper will not send that delta
    moved.drop_prepared("never/prepared.bin");
    BOOST_TEST(temp_files_in(root).size() == 1u);
    BOOST_TEST(temp_files_in(root / "sub").empty());
  }
  BOOST_TEST(temp_files_in(root).empty());
  BOOST_TEST((slurp(root / "a.bin").size() == 1u << 20));
}

// An agent killed while its copy runs, or while the delta lands in the copy, leaves the old file
// and one temp file, which the next sync's sweep removes; that sync then converges.
BOOST_AUTO_TEST_CASE(killed_mid_copy_or_mid_apply_leaves_the_old_file_and_a_temp_the_sweep_removes) {
  TempDir t("ferry-prepare");
  const fs::path root = t.path() / "root";
  const Buf base = random_bytes((20u << 20) + 5, 101);  // three 8 MiB copy pieces
  Buf next = base, delta;
  next[base.size() / 2] ^= 0x5a;
  BOOST_REQUIRE(ferry::delta::generate_delta_from_base(base, next, 0, delta).has_value());
  for (bool in_apply : {false, true}) {
    BOOST_TEST_CONTEXT((in_apply ? "killed half-way through the apply" : "killed after the copy's first piece")) {
      {
        FileWriter w = open_writer(root);
        BOOST_REQUIRE(w.write_file("m.bin", base, attrs_for(base)).has_value());
      }
      const pid_t pid = ::fork();
      BOOST_REQUIRE(pid >= 0);
      if (pid == 0) {
        auto w = FileWriter::open(root);
        if (!w) ::_exit(3);
        if (in_apply) {
          w->set_step_hook([](WriteStep s) {
            if (s == WriteStep::half_written) ::raise(SIGKILL);
          });
        } else {
          w->set_kernel_copy([](int in, std::uint64_t in_at, int out, std::uint64_t out_at, std::size_t n) -> ssize_t {
            if (out_at > 0) ::raise(SIGKILL);  // the second piece: the first is in
            auto i = static_cast<off_t>(in_at), o = static_cast<off_t>(out_at);
            return ::copy_file_range(in, &i, out, &o, n, 0);
          });
        }
        if (!w->prepare_delta_base("m.bin").value_or(false)) ::_exit(4);
        auto r = w->apply_delta("m.bin", delta, attrs_for(next));
        ::_exit(r ? 0 : 5);
      }
      int status = 0;
      BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
      BOOST_TEST(WIFSIGNALED(status));
      BOOST_TEST((slurp(root / "m.bin") == base));
      BOOST_TEST(temp_files_in(root).size() == 1u);
      FileWriter w = open_writer(root);
      auto swept = w.sweep_temp_files();
      BOOST_REQUIRE(swept.has_value());
      BOOST_TEST(*swept == 1u);
      BOOST_REQUIRE(w.prepare_delta_base("m.bin").value_or(false));
      auto ok = w.apply_delta("m.bin", delta, attrs_for(next));
      BOOST_REQUIRE_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message));
      BOOST_TEST((slurp(root / "m.bin") == next));
      BOOST_TEST(w.prepared_used() == 1u);
      BOOST_TEST(temp_files_in(root).empty());
    }
  }
}

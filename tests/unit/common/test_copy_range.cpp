// RangeCopier: byte-exact range copies through the real copy_file_range(2) (same file system and
// across file systems: /dev/shm to the temp directory; POSIX), through read/write only (Windows),
// and through the pread/pwrite fallback when the kernel copy is refused (an injected
// EXDEV/EINVAL) — the real call runs everywhere else. copy_while_unchanged: whole, stoppable, false
// for a source changed while copied.
#define BOOST_TEST_MODULE copy_range
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common/copy_range.hpp"
#include "common/file_times.hpp"
#include "common/full_io.hpp"
#include "common/open_file.hpp"
#include "common/unique_fd.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
namespace posix = ferry::posix;
using ferry::test::TempDir;
using posix::RangeCopier;
using posix::UniqueFd;

namespace {

std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

UniqueFd make_file(const fs::path& p, const std::vector<std::uint8_t>& bytes) {
  UniqueFd fd(posix::open_file(p, O_RDWR | O_CREAT | O_TRUNC, 0600));
  if (!fd) throw std::runtime_error("open " + p.string());
  if (!bytes.empty() && posix::pwrite_full(fd.get(), bytes.data(), bytes.size(), 0) < 0) throw std::runtime_error("write");
  return fd;
}

std::vector<std::uint8_t> contents(int fd) {
  posix::FileStat st;
  posix::stat_fd(fd, st);
  std::vector<std::uint8_t> v(static_cast<std::size_t>(st.size));
  if (posix::pread_full(fd, v.data(), v.size(), 0) != static_cast<ssize_t>(v.size())) throw std::runtime_error("read");
  return v;
}

// A stand-in for copy_file_range(2) that every platform has: the copy done with pread/pwrite.
ssize_t copy_by_hand(int in, std::uint64_t in_off, int out, std::uint64_t out_off, std::size_t n) {
  std::vector<std::uint8_t> buf(n);
  const ssize_t got = posix::pread_full(in, buf.data(), n, in_off);
  if (got <= 0) return got;
  return posix::pwrite_full(out, buf.data(), static_cast<std::size_t>(got), out_off);
}

// Copies [in_off, in_off + n) of `src` to `out_off` in an empty destination and checks every byte
// against the same copy done in memory.
void copy_and_check(RangeCopier& copier, int in, int out, const std::vector<std::uint8_t>& src, std::uint64_t in_off,
                    std::uint64_t out_off, std::size_t n, std::vector<std::uint8_t>& expect) {
  BOOST_TEST_REQUIRE(copier.copy(in, in_off, out, out_off, n) == static_cast<ssize_t>(n));
  if (expect.size() < out_off + n) expect.resize(out_off + n, 0);
  std::copy(src.begin() + static_cast<std::ptrdiff_t>(in_off), src.begin() + static_cast<std::ptrdiff_t>(in_off + n),
            expect.begin() + static_cast<std::ptrdiff_t>(out_off));
  BOOST_TEST_REQUIRE(contents(out) == expect, "destination differs after copying " << n << " bytes at " << in_off);
}

// Aligned (a clone candidate), unaligned on both sides, a length that is not a block multiple,
// and one reaching the source's last byte; returns the bytes copied.
std::uint64_t copy_three_ranges(RangeCopier& copier, const TempDir& dir) {
  const auto src = random_bytes((3u << 20) + 777, 1);
  UniqueFd in = make_file(dir / "in", src), out = make_file(dir / "out", {});
  std::vector<std::uint8_t> expect;
  copy_and_check(copier, in.get(), out.get(), src, 0, 0, 1u << 20, expect);
  copy_and_check(copier, in.get(), out.get(), src, 12345, (1u << 20) + 3, 65537, expect);
  copy_and_check(copier, in.get(), out.get(), src, src.size() - 5000, (2u << 20), 5000, expect);
  return (1u << 20) + 65537u + 5000u;
}

}  // namespace

#ifdef _WIN32
BOOST_AUTO_TEST_CASE(on_windows_every_byte_goes_through_read_and_write) {
  TempDir dir("ferry-copy-range");
  RangeCopier copier;
  const std::uint64_t total = copy_three_ranges(copier, dir);
  BOOST_TEST(copier.counts().user == total);
  BOOST_TEST(copier.counts().kernel + copier.counts().cloned == 0u);
}
#else
BOOST_AUTO_TEST_CASE(same_file_system_goes_through_the_kernel_and_is_exact) {
  TempDir dir("ferry-copy-range");
  RangeCopier copier;
  const std::uint64_t total = copy_three_ranges(copier, dir);
  BOOST_TEST(copier.counts().user == 0u, "a same-file-system copy fell back to user space");
  BOOST_TEST(copier.counts().kernel + copier.counts().cloned == total);
}

BOOST_AUTO_TEST_CASE(across_file_systems_the_bytes_are_exact) {
  if (!fs::is_directory("/dev/shm")) BOOST_FAIL("/dev/shm is missing: this test needs a second file system");
  std::string tmpl = "/dev/shm/ferry-copy-range-XXXXXX";
  BOOST_REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  struct Gone {
    fs::path p;
    ~Gone() { std::error_code ec; fs::remove_all(p, ec); }
  } a{tmpl};
  TempDir b("ferry-copy-range");
  const auto src = random_bytes((2u << 20) + 99, 2);
  UniqueFd in = make_file(a.p / "in", src), out = make_file(b / "out", {});
  RangeCopier copier;
  std::vector<std::uint8_t> expect;
  copy_and_check(copier, in.get(), out.get(), src, 0, 0, src.size(), expect);
  copy_and_check(copier, in.get(), out.get(), src, 4097, src.size() + 11, 300000, expect);
}
#endif

BOOST_AUTO_TEST_CASE(a_refused_kernel_copy_falls_back_to_read_and_write_once) {
  TempDir dir("ferry-copy-range");
  const auto src = random_bytes((2u << 20) + 5, 3);
  UniqueFd in = make_file(dir / "in", src);
  for (int refusal : {EXDEV, EINVAL, ENOSYS, EOPNOTSUPP}) {
    int calls = 0;
    RangeCopier copier(
        [&](int, std::uint64_t, int, std::uint64_t, std::size_t) -> ssize_t {
          ++calls;
          errno = refusal;
          return -1;
        },
        false);
    UniqueFd out = make_file(dir / "out", {});
    std::vector<std::uint8_t> expect;
    copy_and_check(copier, in.get(), out.get(), src, 0, 0, 1u << 20, expect);
    copy_and_check(copier, in.get(), out.get(), src, 1000, 1u << 20, src.size() - 1000, expect);
    BOOST_TEST(calls == 1, "the refused method was asked again");
    BOOST_TEST(copier.counts().kernel == 0u);
    BOOST_TEST(copier.counts().user == (1u << 20) + src.size() - 1000);
  }
}

BOOST_AUTO_TEST_CASE(a_kernel_copy_refused_half_way_finishes_in_user_space) {
  TempDir dir("ferry-copy-range");
  const auto src = random_bytes(3u << 20, 4);
  UniqueFd in = make_file(dir / "in", src), out = make_file(dir / "out", {});
  int calls = 0;
  // A working "kernel" copy for the first 1 MiB, then EXDEV.
  RangeCopier copier(
      [&](int in_fd, std::uint64_t in_off, int out_fd, std::uint64_t out_off, std::size_t n) -> ssize_t {
        if (calls++ > 0) {
          errno = EXDEV;
          return -1;
        }
        return copy_by_hand(in_fd, in_off, out_fd, out_off, std::min<std::size_t>(n, 1u << 20));
      },
      false);
  std::vector<std::uint8_t> expect;
  copy_and_check(copier, in.get(), out.get(), src, 7, 0, src.size() - 7, expect);
  BOOST_TEST(copier.counts().kernel == (1u << 20));
  BOOST_TEST(copier.counts().user == src.size() - 7 - (1u << 20));
}

BOOST_AUTO_TEST_CASE(an_io_error_is_reported_not_papered_over) {
  TempDir dir("ferry-copy-range");
  const auto src = random_bytes(100000, 5);
  UniqueFd in = make_file(dir / "in", src), out = make_file(dir / "out", {});
  RangeCopier copier(
      [](int, std::uint64_t, int, std::uint64_t, std::size_t) -> ssize_t {
        errno = EIO;
        return -1;
      },
      false);
  errno = 0;
  BOOST_TEST(copier.copy(in.get(), 0, out.get(), 0, 1000) == -1);
  BOOST_TEST(errno == EIO);
  BOOST_TEST(copier.counts().user == 0u);
}

BOOST_AUTO_TEST_CASE(a_short_source_copies_what_it_has) {
  TempDir dir("ferry-copy-range");
  const auto src = random_bytes(10000, 6);
  UniqueFd in = make_file(dir / "in", src), out = make_file(dir / "out", {});
  RangeCopier kernel;
  BOOST_TEST(kernel.copy(in.get(), 9000, out.get(), 0, 5000) == 1000);
  RangeCopier user([](int, std::uint64_t, int, std::uint64_t, std::size_t) -> ssize_t {
    errno = EXDEV;
    return -1;
  });
  BOOST_TEST(user.copy(in.get(), 9500, out.get(), 0, 5000) == 500);
  BOOST_TEST(kernel.copy(in.get(), 20000, out.get(), 0, 10) == 0);
}

// copy_while_unchanged: a whole file of several pieces copied exactly; a set stop flag ends it
// with false; a source written while it is copied (its times move) gives false.
BOOST_AUTO_TEST_CASE(a_whole_copy_is_true_only_when_complete_and_the_source_unchanged) {
  TempDir dir("ferry-copy-range");
  const auto src = random_bytes((2 * posix::kCopyPiece) + 4321, 9);
  UniqueFd in = make_file(dir / "in", src);
  posix::FileStat before;
  BOOST_REQUIRE(posix::stat_fd(in.get(), before) == 0);
  std::atomic<bool> stop{false};
  {
    UniqueFd out = make_file(dir / "out", {});
    RangeCopier copier;
    BOOST_TEST(posix::copy_while_unchanged(in.get(), before, out.get(), stop, copier));
    BOOST_TEST((contents(out.get()) == src));
  }
  {
    UniqueFd out = make_file(dir / "out", {});
    stop = true;
    RangeCopier copier;
    BOOST_TEST(!posix::copy_while_unchanged(in.get(), before, out.get(), stop, copier));
    stop = false;
  }
  {
    // The source's mtime moved in the middle of the copy: the second piece's copy first changes it.
    UniqueFd out = make_file(dir / "out", {});
    const int in_fd = in.get();
    RangeCopier copier([in_fd](int i, std::uint64_t in_at, int o, std::uint64_t out_at, std::size_t n) -> ssize_t {
      if (in_at > 0 && posix::set_mtime_fd(in_fd, 1'900'000'000'000'000'700) != 0) return -1;
      return copy_by_hand(i, in_at, o, out_at, n);
    }, false);
    BOOST_TEST(!posix::copy_while_unchanged(in.get(), before, out.get(), stop, copier));
    BOOST_TEST((contents(out.get()) == src));  // whole, yet refused
  }
}

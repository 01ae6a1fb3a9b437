// FileStat from a descriptor, and mtimes set through one coming back to the nanosecond (on
// Windows to the 100 ns step its file times keep, rounded down, before 1970 too); same_file_state
// sees a write. On Windows also the tick arithmetic against the 1601 epoch.
#define BOOST_TEST_MODULE file_times
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <cstdint>
#include <string>

#include "common/file_times.hpp"
#include "common/full_io.hpp"
#include "common/open_file.hpp"
#include "common/unique_fd.hpp"
#include "tests/support/temp_dir.hpp"

#ifdef _WIN32
#include "common/windows/win32.hpp"
#endif

namespace posix = ferry::posix;
using ferry::test::TempDir;
using posix::FileStat;
using posix::UniqueFd;

namespace {

#ifdef _WIN32
constexpr std::int64_t kStep = 100;  // FILETIME's tick
#else
constexpr std::int64_t kStep = 1;
#endif

// `ns` as the file system keeps it: rounded down to kStep.
std::int64_t kept(std::int64_t ns) {
  std::int64_t q = ns / kStep;
  if (ns % kStep < 0) --q;
  return q * kStep;
}

FileStat stat_of(int fd) {
  FileStat st;
  BOOST_REQUIRE(posix::stat_fd(fd, st) == 0);
  return st;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_descriptor_gives_kind_size_and_mode) {
  TempDir t;
  const UniqueFd fd(posix::open_file(t / "f", O_RDWR | O_CREAT | O_TRUNC, 0644));
  BOOST_REQUIRE(fd);
  BOOST_REQUIRE(posix::write_full(fd.get(), "12345", 5) == 5);
  const FileStat st = stat_of(fd.get());
  BOOST_TEST((st.kind == posix::FileKind::regular));
  BOOST_TEST(st.size == 5u);
  BOOST_TEST((st.mode & 0600u) == 0600u);
  BOOST_TEST(st.mtime_ns > 1'600'000'000'000'000'000);  // after 2020: a real clock, in ns
  FileStat none;
  BOOST_TEST(posix::stat_fd(-1, none) == EBADF);
}

BOOST_AUTO_TEST_CASE(an_mtime_set_comes_back_to_the_step_the_platform_keeps) {
  TempDir t;
  const UniqueFd fd(posix::open_file(t / "f", O_RDWR | O_CREAT | O_TRUNC));
  BOOST_REQUIRE(fd);
  for (const std::int64_t ns : {std::int64_t{1'700'000'000'123'456'789}, std::int64_t{1'700'000'000'000'000'000},
                                std::int64_t{-1'234'567'891}, std::int64_t{0}}) {
    BOOST_TEST_REQUIRE(posix::set_mtime_fd(fd.get(), ns) == 0, ns);
    BOOST_TEST(stat_of(fd.get()).mtime_ns == kept(ns), ns);
  }
  BOOST_TEST(kept(1'700'000'000'123'456'789) == 1'700'000'000'123'456'789 - (kStep == 100 ? 89 : 0));
}

BOOST_AUTO_TEST_CASE(a_read_only_descriptor_can_set_the_mtime) {
  TempDir t;
  ferry::test::write_file(t / "f", "x");
  const UniqueFd fd(posix::open_file(t / "f", O_RDONLY));
  BOOST_REQUIRE(fd);
  BOOST_TEST(posix::set_mtime_fd(fd.get(), 1'500'000'000'000'000'000) == 0);
  BOOST_TEST(stat_of(fd.get()).mtime_ns == 1'500'000'000'000'000'000);
  BOOST_TEST(posix::set_mtime_fd(-1, 0) == EBADF);
}

BOOST_AUTO_TEST_CASE(same_file_state_holds_until_a_write) {
  TempDir t;
  const UniqueFd fd(posix::open_file(t / "f", O_RDWR | O_CREAT | O_TRUNC));
  BOOST_REQUIRE(fd);
  BOOST_REQUIRE(posix::write_full(fd.get(), "abc", 3) == 3);
  const FileStat before = stat_of(fd.get());
  BOOST_TEST(posix::same_file_state(before, stat_of(fd.get())));
  BOOST_REQUIRE(posix::write_full(fd.get(), "d", 1) == 1);
  BOOST_TEST(!posix::same_file_state(before, stat_of(fd.get())));
  const UniqueFd other(posix::open_file(t / "g", O_RDWR | O_CREAT | O_TRUNC));
  FileStat g = stat_of(other.get());
  BOOST_TEST(g.ino != before.ino);  // another file, another id
}

#ifdef _WIN32
BOOST_AUTO_TEST_CASE(windows_ticks_count_from_1601_in_100_ns) {
  namespace win = ferry::posix::win;
  constexpr std::int64_t kEpoch = 116444736000000000;  // 1970-01-01 in ticks
  BOOST_TEST(win::ns_of_ticks(kEpoch) == 0);
  BOOST_TEST(win::ticks_of_ns(0) == kEpoch);
  BOOST_TEST(win::ns_of_ticks(kEpoch + 1) == 100);
  BOOST_TEST(win::ticks_of_ns(199) == kEpoch + 1);   // rounded down
  BOOST_TEST(win::ticks_of_ns(-1) == kEpoch - 1);    // down also before 1970
  BOOST_TEST(win::ns_of_ticks(win::ticks_of_ns(1'700'000'000'123'456'700)) == 1'700'000'000'123'456'700);
  const FILETIME ft{0x89abcdefu, 0x01234567u};
  BOOST_TEST(win::ticks_of(ft) == 0x0123456789abcdefLL);
}
#endif

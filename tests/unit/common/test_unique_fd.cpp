// UniqueFd: moves hand the descriptor over, and it is closed exactly once (on Windows too, where
// the descriptors are the C runtime's).
#define BOOST_TEST_MODULE unique_fd
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <utility>

#include "common/file_times.hpp"
#include "common/open_file.hpp"
#include "common/unique_fd.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::posix::UniqueFd;

namespace {

bool is_open(int fd) {
  ferry::posix::FileStat st;
  return ferry::posix::stat_fd(fd, st) != EBADF;
}

const ferry::test::TempDir& dir() {
  static const ferry::test::TempDir d("ferry-unique-fd");
  return d;
}

int open_null() { return ferry::posix::open_file(dir() / "f", O_RDONLY | O_CREAT); }

}  // namespace

BOOST_AUTO_TEST_CASE(closes_when_it_goes_out_of_scope) {
  int raw = -1;
  {
    UniqueFd fd(open_null());
    raw = fd.get();
    BOOST_REQUIRE(fd);
    BOOST_TEST(is_open(raw));
  }
  BOOST_TEST(!is_open(raw));
}

BOOST_AUTO_TEST_CASE(a_move_hands_over_and_closes_once) {
  UniqueFd a(open_null());
  const int raw = a.get();
  UniqueFd b(std::move(a));
  BOOST_TEST(!a);
  BOOST_TEST(a.get() == -1);
  BOOST_TEST(b.get() == raw);
  a = UniqueFd();  // destroying the moved-from owner must not close `raw`
  BOOST_TEST(is_open(raw));
  UniqueFd c;
  c = std::move(b);
  BOOST_TEST(c.get() == raw);
  BOOST_TEST(is_open(raw));
  // Once closed, the number may be reused by the next open: the old owners must not close it.
  c.reset();
  BOOST_TEST(!is_open(raw));
  UniqueFd reused(open_null());
  BOOST_TEST(reused.get() == raw);  // lowest free number
  { UniqueFd gone(std::move(b)); }
  BOOST_TEST(is_open(raw));
}

BOOST_AUTO_TEST_CASE(move_assignment_closes_the_old_descriptor) {
  UniqueFd a(open_null());
  UniqueFd b(open_null());
  const int old_a = a.get(), raw_b = b.get();
  a = std::move(b);
  BOOST_TEST(!is_open(old_a));
  BOOST_TEST(a.get() == raw_b);
  BOOST_TEST(is_open(raw_b));
}

BOOST_AUTO_TEST_CASE(release_gives_up_ownership) {
  int raw = -1;
  {
    UniqueFd fd(open_null());
    raw = fd.release();
    BOOST_TEST(!fd);
  }
  BOOST_TEST(is_open(raw));
  BOOST_TEST(ferry::posix::close_fd(raw) == 0);
  BOOST_TEST(!is_open(raw));
}

BOOST_AUTO_TEST_CASE(close_reports_and_forgets) {
  UniqueFd fd(open_null());
  const int raw = fd.get();
  BOOST_TEST(fd.close() == 0);
  BOOST_TEST(!fd);
  BOOST_TEST(!is_open(raw));
  BOOST_TEST(fd.close() == 0);  // a second close is a no-op, not a close of a reused number
}

BOOST_AUTO_TEST_CASE(reset_keeps_errno) {
  UniqueFd fd(open_null());
  errno = ENOSPC;
  fd.reset();
  BOOST_TEST(errno == ENOSPC);
}

// Owner-only state: new directories and files are 0700/0600 under any umask, an older 0755/0644
// is narrowed when opened again, and directories that were already there above are left alone
// (POSIX). Everywhere: the missing tail of directories is made, the file is created, opened again
// and truncated on request, and a final link is never followed.
#define BOOST_TEST_MODULE private_files
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <filesystem>
#include <string>

#include "common/full_io.hpp"
#include "common/private_files.hpp"
#include "common/unique_fd.hpp"
#include "tests/support/dir_link.hpp"
#include "tests/support/temp_dir.hpp"

#include <fcntl.h>

#ifndef _WIN32
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace fs = std::filesystem;
namespace posix = ferry::posix;

BOOST_AUTO_TEST_CASE(the_missing_directories_are_made_and_a_file_in_the_way_is_an_error) {
  ferry::test::TempDir t;
  BOOST_TEST(!posix::make_private_dirs(t / "a" / "b" / "c"));
  BOOST_TEST(fs::is_directory(t / "a" / "b" / "c"));
  BOOST_TEST(!posix::make_private_dirs(t / "a" / "b"));  // there already: fine
  ferry::test::write_file(t / "file", "x");
  BOOST_TEST(static_cast<bool>(posix::make_private_dirs(t / "file" / "below")));
  BOOST_TEST(static_cast<bool>(posix::make_private_dirs(fs::path())));
}

BOOST_AUTO_TEST_CASE(a_private_file_is_created_reopened_and_truncated_on_request) {
  ferry::test::TempDir t;
  {
    const posix::UniqueFd fd(posix::open_private(t / "state", O_WRONLY | O_APPEND));
    BOOST_REQUIRE(fd);
    BOOST_TEST(posix::write_full(fd.get(), "one\n", 4) == 4);
    BOOST_TEST(!posix::make_private(fd.get()));
  }
  {
    const posix::UniqueFd fd(posix::open_private(t / "state", O_WRONLY | O_APPEND));
    BOOST_TEST(posix::write_full(fd.get(), "two\n", 4) == 4);
  }
  BOOST_TEST(ferry::test::read_file(t / "state") == "one\ntwo\n");
  {
    const posix::UniqueFd fd(posix::open_private(t / "state", O_RDWR | O_TRUNC));
    BOOST_REQUIRE(fd);
  }
  BOOST_TEST(ferry::test::read_file(t / "state").empty());
  BOOST_TEST(posix::open_private(t / "state", O_WRONLY | O_EXCL) < 0);
  BOOST_TEST(errno == EEXIST);
  BOOST_TEST(posix::open_private(t / "missing" / "state", O_WRONLY) < 0);
  BOOST_TEST(errno == ENOENT);
}

// A link where ferry expects its own file could point at anyone's: refused, never opened. (A link
// to a directory, the kind of link Wine shows as one.)
BOOST_AUTO_TEST_CASE(a_final_link_is_not_followed) {
  ferry::test::TempDir t;
  fs::create_directories(t / "elsewhere");
  const ferry::test::DirLink link(t / "elsewhere", t / "link");
  BOOST_TEST(posix::open_private(t / "link", O_WRONLY) < 0);
  BOOST_TEST(errno == ELOOP);
}

#ifndef _WIN32

namespace {

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  BOOST_REQUIRE_MESSAGE(::lstat(p.c_str(), &st) == 0, p << " is missing");
  return st.st_mode & 07777;
}

struct Umask {
  mode_t saved;
  explicit Umask(mode_t m) : saved(::umask(m)) {}
  ~Umask() { ::umask(saved); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(new_dirs_are_0700_whatever_the_umask) {
  ferry::test::TempDir t;
  ::chmod(t.path().c_str(), 0755);
  for (mode_t m : {mode_t{0}, mode_t{022}, mode_t{0277}}) {
    Umask u(m);
    const fs::path top = t.path() / std::to_string(m);
    BOOST_REQUIRE(!posix::make_private_dirs(top / "a" / "b"));
    for (const auto& p : {top, top / "a", top / "a" / "b"}) BOOST_TEST(mode_of(p) == 0700u, p);
  }
  BOOST_TEST(mode_of(t.path()) == 0755u);  // was there: not ours to change
}

BOOST_AUTO_TEST_CASE(an_older_open_dir_and_file_are_narrowed) {
  Umask u(022);
  ferry::test::TempDir t;
  const fs::path dir = t.path() / ".ferry";
  fs::create_directories(dir / "sent");
  ::chmod(dir.c_str(), 0755);
  ::chmod(t.path().c_str(), 0755);
  BOOST_REQUIRE(!posix::make_private_dirs(dir));
  BOOST_TEST(mode_of(dir) == 0700u);
  BOOST_TEST(mode_of(t.path()) == 0755u);

  const posix::UniqueFd made(::open((dir / "old.lock").c_str(), O_CREAT | O_WRONLY, 0644));
  BOOST_REQUIRE(made);
  BOOST_TEST(mode_of(dir / "old.lock") == 0644u);
  const posix::UniqueFd fd(posix::open_private(dir / "old.lock", O_RDWR));
  BOOST_REQUIRE(fd);
  BOOST_TEST(mode_of(dir / "old.lock") == 0600u);
  const posix::UniqueFd fresh(posix::open_private(dir / "new.log", O_WRONLY | O_APPEND));
  BOOST_REQUIRE(fresh);
  BOOST_TEST(mode_of(dir / "new.log") == 0600u);
  // A final symlink to a file is not followed either (it could point at anyone's file).
  fs::create_symlink(dir / "new.log", dir / "link.log");
  BOOST_TEST(posix::open_private(dir / "link.log", O_WRONLY) < 0);
}

#endif

// Owner-only state: new directories and files are 0700/0600 under any umask, an older 0755/0644
// is narrowed when opened again, and directories that were already there above are left alone.
#define BOOST_TEST_MODULE private_files
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "common/private_files.hpp"
#include "common/unique_fd.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
namespace posix = ferry::posix;

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
  // A final symlink is not followed (it could point at anyone's file).
  fs::create_symlink(dir / "new.log", dir / "link.log");
  BOOST_TEST(posix::open_private(dir / "link.log", O_WRONLY) < 0);
}

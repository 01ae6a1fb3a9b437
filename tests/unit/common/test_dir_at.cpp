// The calls relative to a directory descriptor (common/dir_at.hpp) on both platforms (this test
// runs on Linux and under Wine): files and directories made, renamed and removed by name under a
// descriptor, and a link in the last component never followed: not opened, not written through,
// and its target never removed.
#define BOOST_TEST_MODULE dir_at
#include <boost/test/unit_test.hpp>

#include <fcntl.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "common/dir_at.hpp"
#include "common/full_io.hpp"
#include "tests/support/dir_link.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
namespace posix = ferry::posix;
using ferry::test::read_file;
using ferry::test::TempDir;
using ferry::test::write_file;
using posix::FileKind;
using posix::UniqueFd;

namespace {

UniqueFd open_dir(const fs::path& p) {
  UniqueFd fd = posix::open_dir_path(p);
  BOOST_REQUIRE_MESSAGE(fd, "open " << p << ": errno " << errno);
  return fd;
}

void write_at(int dirfd, const std::string& name, const std::string& content, int flags) {
  UniqueFd fd(posix::open_at(dirfd, name, O_WRONLY | flags, 0644));
  BOOST_REQUIRE_MESSAGE(fd, "open_at " << name << ": errno " << errno);
  BOOST_REQUIRE(posix::write_full(fd.get(), content.data(), content.size()) == static_cast<ssize_t>(content.size()));
  BOOST_TEST(posix::sync_fd(fd.get()) == 0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_file_is_made_read_and_refused_a_second_time_with_excl) {
  TempDir t;
  const UniqueFd dir = open_dir(t.path());
  write_at(dir.get(), "new.txt", "hello", O_CREAT | O_EXCL);
  BOOST_TEST(read_file(t / "new.txt") == "hello");
  BOOST_TEST(posix::open_at(dir.get(), "new.txt", O_WRONLY | O_CREAT | O_EXCL, 0644) == -1);
  BOOST_TEST(errno == EEXIST);
  write_at(dir.get(), "new.txt", "bye", O_TRUNC);
  BOOST_TEST(read_file(t / "new.txt") == "bye");
  BOOST_TEST(posix::open_at(dir.get(), "missing", O_RDONLY) == -1);
  BOOST_TEST(errno == ENOENT);
}

BOOST_AUTO_TEST_CASE(a_name_with_several_components_and_utf8_is_opened_under_the_directory) {
  TempDir t;
  write_file(t / "sub" / fs::path(u8"d\u00e9j\u00e0.txt"), "x");
  const UniqueFd dir = open_dir(t.path());
  UniqueFd fd(posix::open_at(dir.get(), "sub/d\xc3\xa9j\xc3\xa0.txt", O_RDONLY));
  BOOST_REQUIRE(fd);
  posix::FileStat st;
  BOOST_REQUIRE(posix::stat_fd(fd.get(), st) == 0);
  BOOST_TEST(st.size == 1u);
}

BOOST_AUTO_TEST_CASE(a_link_in_the_last_component_is_never_opened_or_written_through) {
  TempDir t;
  write_file(t / "outside/secret", "keep");
  fs::create_directories(t / "tree");
  const ferry::test::DirLink link(t / "outside", t / "tree/link");
  const UniqueFd dir = open_dir(t / "tree");
  BOOST_TEST(!posix::open_dir_nofollow(dir.get(), "link"));
  BOOST_TEST((errno == ELOOP || errno == ENOTDIR));
  BOOST_TEST(posix::open_at(dir.get(), "link", O_RDONLY) == -1);
  BOOST_TEST(posix::open_at(dir.get(), "link", O_WRONLY | O_CREAT | O_TRUNC, 0644) == -1);
  BOOST_TEST(posix::open_at(dir.get(), "link", O_WRONLY | O_CREAT | O_EXCL, 0644) == -1);
  BOOST_TEST(errno == EEXIST);
  posix::FileStat st;
  BOOST_REQUIRE(posix::stat_nofollow(dir.get(), "link", st) == 0);
  BOOST_TEST((st.kind == FileKind::symlink));
  // Removing the name never reaches the target: POSIX removes the link, Windows refuses (EPERM).
  const int removed = posix::unlink_at(dir.get(), "link");
  BOOST_TEST((removed == 0 || errno == EPERM));
  BOOST_TEST(read_file(t / "outside/secret") == "keep");
}

BOOST_AUTO_TEST_CASE(directories_are_made_once_and_opened_by_name) {
  TempDir t;
  const UniqueFd dir = open_dir(t.path());
  BOOST_REQUIRE(posix::mkdir_at(dir.get(), "d", 0755) == 0);
  BOOST_TEST(posix::mkdir_at(dir.get(), "d", 0755) == -1);
  BOOST_TEST(errno == EEXIST);
  const UniqueFd sub = posix::open_dir_nofollow(dir.get(), "d");
  BOOST_REQUIRE(sub);
  write_at(sub.get(), "inner", "1", O_CREAT | O_EXCL);
  BOOST_TEST(read_file(t / "d/inner") == "1");
  write_file(t / "f", "1");
  BOOST_TEST(!posix::open_dir_nofollow(dir.get(), "f"));
  BOOST_TEST(errno == ENOTDIR);
  auto reader = posix::open_dir_at(dir.get(), "d");
  BOOST_REQUIRE(reader.has_value());
  auto e = reader->next();
  BOOST_REQUIRE(e.has_value());
  BOOST_TEST(std::string(e->name) == "inner");
  posix::FileStat st;
  BOOST_TEST(posix::stat_nofollow(posix::dir_fd(*reader), "inner", st) == 0);
  BOOST_TEST(st.size == 1u);
}

BOOST_AUTO_TEST_CASE(a_rename_between_directories_replaces_the_file_there) {
  TempDir t;
  write_file(t / "a/tmp", "new");
  write_file(t / "b/target", "old");
  const UniqueFd a = open_dir(t / "a");
  const UniqueFd b = open_dir(t / "b");
  BOOST_REQUIRE_MESSAGE(posix::rename_at(a.get(), "tmp", b.get(), "target") == 0, "errno " << errno);
  BOOST_TEST(read_file(t / "b/target") == "new");
  BOOST_TEST(!fs::exists(t / "a/tmp"));
  BOOST_TEST(posix::rename_at(a.get(), "tmp", b.get(), "again") == -1);
  BOOST_TEST(errno == ENOENT);
}

BOOST_AUTO_TEST_CASE(a_file_is_removed_by_name_and_a_directory_is_not) {
  TempDir t;
  write_file(t / "f", "1");
  fs::create_directories(t / "d");
  const UniqueFd dir = open_dir(t.path());
  BOOST_REQUIRE(posix::unlink_at(dir.get(), "f") == 0);
  BOOST_TEST(!fs::exists(t / "f"));
  BOOST_TEST(posix::unlink_at(dir.get(), "f") == -1);
  BOOST_TEST(errno == ENOENT);
  BOOST_TEST(posix::unlink_at(dir.get(), "d") == -1);
  BOOST_TEST(fs::is_directory(t / "d"));
}

BOOST_AUTO_TEST_CASE(size_and_the_owner_write_bit_are_set_through_the_descriptor) {
  TempDir t;
  write_file(t / "f", "hello world");
  const UniqueFd dir = open_dir(t.path());
  {
    UniqueFd fd(posix::open_at(dir.get(), "f", O_RDWR));
    BOOST_REQUIRE(fd);
    BOOST_TEST(posix::truncate_fd(fd.get(), 5) == 0);
    BOOST_TEST(posix::chmod_fd(fd.get(), 0444) == 0);
    posix::FileStat st;
    BOOST_REQUIRE(posix::stat_fd(fd.get(), st) == 0);
    BOOST_TEST(st.size == 5u);
    BOOST_TEST((st.mode & 0222) == 0u);
    BOOST_TEST(posix::chmod_fd(fd.get(), 0644) == 0);
    BOOST_REQUIRE(posix::stat_fd(fd.get(), st) == 0);
    BOOST_TEST((st.mode & 0200) != 0u);
  }
  BOOST_TEST(read_file(t / "f") == "hello");
}

// DirReader and friends never follow a symlink: not into a linked directory, not when statting
// an entry, not when opening a directory by name.
#define BOOST_TEST_MODULE dir_reader
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <string>

#include "common/dir_reader.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
namespace posix = ferry::posix;
using ferry::test::TempDir;

namespace {

std::map<std::string, mode_t> list(int at, const std::string& rel) {
  auto dir = posix::DirReader::open(at, rel);
  BOOST_REQUIRE_MESSAGE(dir.has_value(), "open " << rel << ": errno " << (dir ? 0 : dir.error()));
  std::map<std::string, mode_t> out;
  while (auto e = dir->next()) {
    BOOST_TEST(e->stat_error == 0);
    out.emplace(e->name, e->st.st_mode & S_IFMT);
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(entries_are_statted_without_following_links) {
  TempDir t;
  ferry::test::write_file(t / "tree/a.txt", "hello");
  fs::create_directories(t / "tree/sub");
  fs::create_directories(t / "outside");
  ferry::test::write_file(t / "outside/secret", "not yours");
  fs::create_directory_symlink(t / "outside", t / "tree/link-to-dir");
  fs::create_symlink(t / "tree/a.txt", t / "tree/link-to-file");
  posix::UniqueFd root(::open((t / "tree").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  BOOST_REQUIRE(root);
  const auto entries = list(root.get(), "");
  BOOST_TEST(entries.size() == 4u);  // no "." or ".."
  BOOST_TEST(entries.at("a.txt") == S_IFREG);
  BOOST_TEST(entries.at("sub") == S_IFDIR);
  BOOST_TEST(entries.at("link-to-dir") == S_IFLNK);
  BOOST_TEST(entries.at("link-to-file") == S_IFLNK);
}

BOOST_AUTO_TEST_CASE(a_linked_directory_is_not_opened) {
  TempDir t;
  fs::create_directories(t / "tree/sub");
  fs::create_directories(t / "outside");
  fs::create_directory_symlink(t / "outside", t / "tree/link");
  posix::UniqueFd root(::open((t / "tree").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto linked = posix::DirReader::open(root.get(), "link");
  BOOST_REQUIRE(!linked.has_value());
  // Linux answers O_DIRECTORY|O_NOFOLLOW on a symlink with ENOTDIR (ELOOP without O_DIRECTORY).
  BOOST_TEST((linked.error() == ENOTDIR || linked.error() == ELOOP));
  BOOST_TEST(!posix::open_dir_nofollow(root.get(), "link"));
  BOOST_TEST((errno == ENOTDIR || errno == ELOOP));
  BOOST_TEST(list(root.get(), "sub").empty());
  auto file = posix::DirReader::open(root.get(), "missing");
  BOOST_TEST(file.error() == ENOENT);
}

BOOST_AUTO_TEST_CASE(an_empty_name_reads_the_directory_itself_and_leaves_it_open) {
  TempDir t;
  ferry::test::write_file(t / "x", "1");
  posix::UniqueFd root(::open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  BOOST_TEST(list(root.get(), "").size() == 1u);
  BOOST_TEST(::fcntl(root.get(), F_GETFD) != -1);  // the reader closed its own descriptor only
  BOOST_TEST(list(root.get(), "").size() == 1u);   // and each reader has its own offset
}

BOOST_AUTO_TEST_CASE(adopt_refuses_a_non_directory_and_closes_it) {
  TempDir t;
  ferry::test::write_file(t / "f", "1");
  posix::UniqueFd f(::open((t / "f").c_str(), O_RDONLY | O_CLOEXEC));
  const int raw = f.get();
  auto dir = posix::DirReader::adopt(std::move(f));
  BOOST_REQUIRE(!dir.has_value());
  BOOST_TEST(dir.error() == ENOTDIR);
  BOOST_TEST(::fcntl(raw, F_GETFD) == -1);
}

BOOST_AUTO_TEST_CASE(link_targets_are_read_and_a_grown_one_is_refused) {
  TempDir t;
  fs::create_symlink("some/where", t / "l");
  posix::UniqueFd dir(::open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat st {};
  BOOST_REQUIRE(posix::stat_nofollow(dir.get(), "l", st) == 0);
  BOOST_TEST(S_ISLNK(st.st_mode));
  BOOST_TEST(posix::read_link_at(dir.get(), "l", static_cast<std::size_t>(st.st_size)).value_or("?") == "some/where");
  // A stale, shorter size (the link was replaced by a longer one after the stat): refused.
  BOOST_TEST(!posix::read_link_at(dir.get(), "l", 3).has_value());
  BOOST_TEST(!posix::read_link_at(dir.get(), "missing", 10).has_value());
  BOOST_TEST(posix::stat_nofollow(dir.get(), "missing", st) == ENOENT);
}

// DirReader and friends never follow a link: not into a linked directory, not when statting an
// entry, not when opening a directory by name. Entries carry the same FileStat a descriptor of the
// file gives, and names come back as UTF-8 on every platform. The calls relative to a directory
// descriptor (common/dir_at.hpp) are POSIX's; on Windows, which reparse points count as
// links, and a link made under Wine.
#define BOOST_TEST_MODULE dir_reader
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <filesystem>
#include <map>
#include <string>

#include "common/dir_reader.hpp"
#include "common/file_times.hpp"
#include "common/open_file.hpp"
#include "common/unique_fd.hpp"
#include "tests/support/dir_link.hpp"
#include "tests/support/temp_dir.hpp"

#ifdef _WIN32
#include "common/windows/win32.hpp"
#else
#include <fcntl.h>

#include "common/dir_at.hpp"
#endif

namespace fs = std::filesystem;
namespace posix = ferry::posix;
using ferry::test::TempDir;
using posix::FileKind;

namespace {

std::map<std::string, posix::FileStat> list(const fs::path& dir) {
  auto reader = posix::DirReader::open(dir);
  BOOST_REQUIRE_MESSAGE(reader.has_value(), "open " << dir << ": errno " << (reader ? 0 : reader.error()));
  std::map<std::string, posix::FileStat> out;
  while (auto e = reader->next()) {
    BOOST_TEST(e->stat_error == 0, e->name);
    out.emplace(e->name, e->st);
  }
  return out;
}

posix::FileStat stat_of(const fs::path& file) {
  const posix::UniqueFd fd(posix::open_file(file, O_RDONLY));
  BOOST_REQUIRE_MESSAGE(fd, "open " << file);
  posix::FileStat st;
  BOOST_REQUIRE(posix::stat_fd(fd.get(), st) == 0);
  return st;
}

}  // namespace

BOOST_AUTO_TEST_CASE(entries_carry_their_kind_and_the_stat_their_descriptor_gives) {
  TempDir t;
  ferry::test::write_file(t / "tree/a.txt", "hello");
  fs::create_directories(t / "tree/sub");
  const auto entries = list(t / "tree");
  BOOST_TEST(entries.size() == 2u);  // no "." or ".."
  BOOST_TEST((entries.at("sub").kind == FileKind::directory));
  const posix::FileStat& a = entries.at("a.txt");
  BOOST_TEST((a.kind == FileKind::regular));
  BOOST_TEST(a.size == 5u);
  BOOST_TEST(posix::same_file_state(a, stat_of(t / "tree/a.txt")));  // dev, ino, size, mtime, ctime
  BOOST_TEST((a.mode & 0400u) != 0u);
  BOOST_TEST(list(t / "tree/sub").empty());
}

BOOST_AUTO_TEST_CASE(a_name_comes_back_as_its_utf8_bytes) {
  TempDir t;
  const std::u8string name = u8"\u00e9t\u00e9 \u4e2d.txt";  // "été 中.txt"
  ferry::test::write_file(t.path() / fs::path(name), "x");
  const auto entries = list(t.path());
  BOOST_REQUIRE(entries.size() == 1u);
  BOOST_TEST(entries.begin()->first == std::string(name.begin(), name.end()));
  BOOST_TEST(entries.begin()->second.size == 1u);
}

BOOST_AUTO_TEST_CASE(a_linked_directory_is_listed_as_a_link_and_never_opened) {
  TempDir t;
  fs::create_directories(t / "tree/sub");
  ferry::test::write_file(t / "outside/secret", "not yours");
  const ferry::test::DirLink link(t / "outside", t / "tree/link");
  const auto entries = list(t / "tree");
  BOOST_TEST(entries.size() == 2u);
  BOOST_TEST((entries.at("link").kind == FileKind::symlink));
  BOOST_TEST((entries.at("sub").kind == FileKind::directory));
  auto linked = posix::DirReader::open(t / "tree/link");
  BOOST_REQUIRE(!linked.has_value());
  // Linux answers O_DIRECTORY|O_NOFOLLOW on a symlink with ENOTDIR (ELOOP without O_DIRECTORY).
  BOOST_TEST((linked.error() == ENOTDIR || linked.error() == ELOOP));
}

BOOST_AUTO_TEST_CASE(a_missing_name_or_a_file_is_refused) {
  TempDir t;
  ferry::test::write_file(t / "f", "1");
  auto missing = posix::DirReader::open(t / "missing");
  BOOST_REQUIRE(!missing.has_value());
  BOOST_TEST(missing.error() == ENOENT);
  auto file = posix::DirReader::open(t / "f");
  BOOST_REQUIRE(!file.has_value());
  BOOST_TEST(file.error() == ENOTDIR);
  BOOST_TEST(posix::DirReader::open(fs::path()).error() == ENOENT);
}

BOOST_AUTO_TEST_CASE(a_reader_moved_from_reads_nothing_and_the_new_one_all) {
  TempDir t;
  ferry::test::write_file(t / "a", "1");
  ferry::test::write_file(t / "b", "2");
  auto first = posix::DirReader::open(t.path());
  BOOST_REQUIRE(first.has_value());
  auto e = first->next();
  BOOST_REQUIRE(e.has_value());
  posix::DirReader moved = std::move(*first);
  BOOST_TEST(!first->next().has_value());
  BOOST_TEST(moved.next().has_value());  // the other of the two
  BOOST_TEST(!moved.next().has_value());
}

#ifdef _WIN32

// Which reparse points are links: name surrogates (symbolic links, junctions, WSL links) and the
// tagless ones Wine reports; not cloud placeholders or deduplicated files, which are what they hold.
BOOST_AUTO_TEST_CASE(windows_reparse_points_that_stand_for_links_are_links) {
  namespace win = ferry::posix::win;
  constexpr DWORD kDirLink = FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT;
  constexpr DWORD kFileLink = FILE_ATTRIBUTE_ARCHIVE | FILE_ATTRIBUTE_REPARSE_POINT;
  BOOST_TEST((win::kind_of(kDirLink, IO_REPARSE_TAG_MOUNT_POINT) == FileKind::symlink));  // a junction
  BOOST_TEST((win::kind_of(kDirLink, IO_REPARSE_TAG_SYMLINK) == FileKind::symlink));
  BOOST_TEST((win::kind_of(kFileLink, IO_REPARSE_TAG_SYMLINK) == FileKind::symlink));
  BOOST_TEST((win::kind_of(kFileLink, 0xA000001D) == FileKind::symlink));  // IO_REPARSE_TAG_LX_SYMLINK
  BOOST_TEST((win::kind_of(kDirLink, 0) == FileKind::symlink));           // Wine's tagless link
  BOOST_TEST((win::kind_of(kDirLink, 0x9000601A) == FileKind::directory));  // IO_REPARSE_TAG_CLOUD_6
  BOOST_TEST((win::kind_of(kFileLink, IO_REPARSE_TAG_DEDUP) == FileKind::regular));
  BOOST_TEST((win::kind_of(FILE_ATTRIBUTE_DIRECTORY, IO_REPARSE_TAG_SYMLINK) == FileKind::directory));  // no reparse bit
  BOOST_TEST((win::kind_of(FILE_ATTRIBUTE_NORMAL, 0) == FileKind::regular));
  BOOST_TEST(win::mode_of(FILE_ATTRIBUTE_READONLY) == 0444u);
  BOOST_TEST(win::mode_of(FILE_ATTRIBUTE_NORMAL) == 0644u);
  BOOST_TEST(win::mode_of(FILE_ATTRIBUTE_DIRECTORY) == 0755u);
}

#else

namespace {

std::map<std::string, FileKind> list_at(int at, const std::string& rel) {
  auto dir = posix::open_dir_at(at, rel);
  BOOST_REQUIRE_MESSAGE(dir.has_value(), "open " << rel << ": errno " << (dir ? 0 : dir.error()));
  std::map<std::string, FileKind> out;
  while (auto e = dir->next()) {
    BOOST_TEST(e->stat_error == 0);
    out.emplace(e->name, e->st.kind);
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(entries_are_statted_without_following_links) {
  TempDir t;
  ferry::test::write_file(t / "tree/a.txt", "hello");
  fs::create_directories(t / "tree/sub");
  fs::create_directories(t / "outside");
  fs::create_directory_symlink(t / "outside", t / "tree/link-to-dir");
  fs::create_symlink(t / "tree/a.txt", t / "tree/link-to-file");
  posix::UniqueFd root(::open((t / "tree").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  BOOST_REQUIRE(root);
  const auto entries = list_at(root.get(), "");
  BOOST_TEST(entries.size() == 4u);
  BOOST_TEST((entries.at("a.txt") == FileKind::regular));
  BOOST_TEST((entries.at("sub") == FileKind::directory));
  BOOST_TEST((entries.at("link-to-dir") == FileKind::symlink));
  BOOST_TEST((entries.at("link-to-file") == FileKind::symlink));
}

BOOST_AUTO_TEST_CASE(a_linked_directory_is_not_opened_by_descriptor) {
  TempDir t;
  fs::create_directories(t / "tree/sub");
  fs::create_directories(t / "outside");
  fs::create_directory_symlink(t / "outside", t / "tree/link");
  posix::UniqueFd root(::open((t / "tree").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto linked = posix::open_dir_at(root.get(), "link");
  BOOST_REQUIRE(!linked.has_value());
  BOOST_TEST((linked.error() == ENOTDIR || linked.error() == ELOOP));
  BOOST_TEST(!posix::open_dir_nofollow(root.get(), "link"));
  BOOST_TEST((errno == ENOTDIR || errno == ELOOP));
  BOOST_TEST(list_at(root.get(), "sub").empty());
  auto file = posix::open_dir_at(root.get(), "missing");
  BOOST_TEST(file.error() == ENOENT);
}

BOOST_AUTO_TEST_CASE(an_empty_name_reads_the_directory_itself_and_leaves_it_open) {
  TempDir t;
  ferry::test::write_file(t / "x", "1");
  posix::UniqueFd root(::open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  BOOST_TEST(list_at(root.get(), "").size() == 1u);
  BOOST_TEST(::fcntl(root.get(), F_GETFD) != -1);  // the reader closed its own descriptor only
  BOOST_TEST(list_at(root.get(), "").size() == 1u);   // and each reader has its own offset
}

BOOST_AUTO_TEST_CASE(adopt_refuses_a_non_directory_and_closes_it) {
  TempDir t;
  ferry::test::write_file(t / "f", "1");
  posix::UniqueFd f(::open((t / "f").c_str(), O_RDONLY | O_CLOEXEC));
  const int raw = f.get();
  auto dir = posix::adopt_dir(std::move(f));
  BOOST_REQUIRE(!dir.has_value());
  BOOST_TEST(dir.error() == ENOTDIR);
  BOOST_TEST(::fcntl(raw, F_GETFD) == -1);
}

BOOST_AUTO_TEST_CASE(the_reader_s_descriptor_is_its_directory) {
  TempDir t;
  ferry::test::write_file(t / "x", "1");
  auto dir = posix::DirReader::open(t.path());
  BOOST_REQUIRE(dir.has_value());
  posix::FileStat st;
  BOOST_REQUIRE(posix::stat_nofollow(posix::dir_fd(*dir), "x", st) == 0);
  BOOST_TEST(st.size == 1u);
}

BOOST_AUTO_TEST_CASE(link_targets_are_read_and_a_grown_one_is_refused) {
  TempDir t;
  fs::create_symlink("some/where", t / "l");
  posix::UniqueFd dir(::open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  posix::FileStat st;
  BOOST_REQUIRE(posix::stat_nofollow(dir.get(), "l", st) == 0);
  BOOST_TEST((st.kind == FileKind::symlink));
  BOOST_TEST(posix::read_link_at(dir.get(), "l", static_cast<std::size_t>(st.size)).value_or("?") == "some/where");
  // A stale, shorter size (the link was replaced by a longer one after the stat): refused.
  BOOST_TEST(!posix::read_link_at(dir.get(), "l", 3).has_value());
  BOOST_TEST(!posix::read_link_at(dir.get(), "missing", 10).has_value());
  BOOST_TEST(posix::stat_nofollow(dir.get(), "missing", st) == ENOENT);
}

#endif

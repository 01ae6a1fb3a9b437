// MappedFile: a mapped local file that another process truncates is read as zeros past its new
// end and says truncated(), instead of killing the reader with SIGBUS; a SIGBUS from any other
// mapping still kills the process, as it would without MappedFile. On Windows a mapped file
// cannot be truncated at all: its bytes stay and truncated() stays false.
#define BOOST_TEST_MODULE mapped_file
#include <boost/test/unit_test.hpp>

#include <numeric>
#include <vector>

#include "common/mapped_file.hpp"
#include "common/open_file.hpp"
#include "common/unique_fd.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/temp_dir.hpp"

#ifdef _WIN32
#include <io.h>
#else
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

using ferry::posix::MappedFile;
using ferry::test::TempDir;

BOOST_AUTO_TEST_CASE(an_untouched_file_reads_whole_and_is_not_truncated) {
  TempDir t("ferry-mapped");
  const auto content = ferry::test::random_bytes((1u << 20) + 17, 1);
  ferry::test::write_file(t / "f", content);
  auto m = MappedFile::open(t / "f");
  BOOST_REQUIRE(m.has_value());
  BOOST_TEST(m->size() == content.size());
  BOOST_TEST((std::vector<std::uint8_t>(m->bytes().begin(), m->bytes().end()) == content));
  BOOST_TEST(!m->truncated());
  auto missing = MappedFile::open(t / "nope");
  BOOST_REQUIRE(!missing.has_value());
  BOOST_TEST(missing.error() == "missing");
}

BOOST_AUTO_TEST_CASE(an_empty_file_and_an_open_descriptor_map_too) {
  TempDir t("ferry-mapped");
  ferry::test::write_file(t / "empty", "");
  auto empty = MappedFile::open(t / "empty");
  BOOST_REQUIRE(empty.has_value());
  BOOST_TEST(empty->size() == 0u);
  BOOST_TEST(empty->bytes().empty());
  const auto content = ferry::test::random_bytes(5000, 5);
  ferry::test::write_file(t / "f", content);
  const ferry::posix::UniqueFd fd(ferry::posix::open_file(t / "f", O_RDONLY));
  auto m = MappedFile::map(fd.get());
  BOOST_REQUIRE(m.has_value());
  BOOST_TEST((std::vector<std::uint8_t>(m->bytes().begin(), m->bytes().end()) == content));
  BOOST_TEST(m->mtime_ns() > 0);
  BOOST_TEST(!MappedFile::open(t.path()).has_value());  // a directory is no regular file
}

#ifdef _WIN32

BOOST_AUTO_TEST_CASE(a_mapped_file_cannot_be_truncated_on_windows) {
  TempDir t("ferry-mapped");
  const auto content = ferry::test::random_bytes(1u << 20, 2);
  ferry::test::write_file(t / "f", content);
  const ferry::posix::UniqueFd w(ferry::posix::open_file(t / "f", O_WRONLY));
  BOOST_REQUIRE(w);
  {
    auto m = MappedFile::open(t / "f");
    BOOST_REQUIRE(m.has_value());
    BOOST_TEST(::_chsize_s(w.get(), 4096) != 0);  // refused while the view is mapped
    BOOST_TEST((std::vector<std::uint8_t>(m->bytes().begin(), m->bytes().end()) == content));
    BOOST_TEST(!m->truncated());
  }
  BOOST_TEST(::_chsize_s(w.get(), 4096) == 0);  // and allowed once it is gone
  BOOST_TEST(ferry::test::read_bytes(t / "f").size() == 4096u);
}

#else

BOOST_AUTO_TEST_CASE(a_file_truncated_while_mapped_reads_zeros_and_says_so) {
  TempDir t("ferry-mapped");
  const auto content = ferry::test::random_bytes(4u << 20, 2);
  ferry::test::write_file(t / "f", content);
  auto m = MappedFile::open(t / "f");
  BOOST_REQUIRE(m.has_value());
  BOOST_REQUIRE(::truncate((t / "f").c_str(), 4096) == 0);  // as torch.save's O_TRUNC would
  // Every page touched: without the handler the first one past 4096 kills this process.
  const auto bytes = m->bytes();
  std::uint64_t past_end = 0;
  for (std::size_t i = 0; i < bytes.size(); i += 512) {
    const std::uint8_t b = *static_cast<const volatile std::uint8_t*>(&bytes[i]);
    if (i >= 4096) past_end += b;
  }
  BOOST_TEST(past_end == 0u);  // the vanished pages read as zeros
  BOOST_TEST(m->truncated());
  BOOST_TEST(bytes[bytes.size() - 1] == 0);
  BOOST_TEST(bytes[0] == content[0]);
  // A second mapping of another file is unaffected.
  ferry::test::write_file(t / "g", content);
  auto g = MappedFile::open(t / "g");
  BOOST_REQUIRE(g.has_value());
  BOOST_TEST(!g->truncated());
  BOOST_TEST(g->bytes()[content.size() - 1] == content.back());
}

BOOST_AUTO_TEST_CASE(a_sigbus_elsewhere_still_kills) {
  TempDir t("ferry-mapped");
  ferry::test::write_file(t / "f", ferry::test::random_bytes(1u << 16, 3));
  { auto m = MappedFile::open(t / "f"); BOOST_REQUIRE(m.has_value()); }  // the handler is installed
  ferry::test::write_file(t / "other", ferry::test::random_bytes(1u << 16, 4));
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    // As in ferry: no other SIGBUS handler (Boost.Test has one) before MappedFile's.
    ::signal(SIGBUS, SIG_DFL);
    auto mine = MappedFile::open(t / "f");
    if (!mine) ::_exit(2);
    const int fd = ::open((t / "other").c_str(), O_RDONLY);
    auto* p = static_cast<volatile std::uint8_t*>(::mmap(nullptr, 1u << 16, PROT_READ, MAP_SHARED, fd, 0));
    if (::truncate((t / "other").c_str(), 0) != 0) ::_exit(3);
    const std::uint8_t b = p[40000];  // SIGBUS, not MappedFile's
    ::_exit(b == 0 ? 4 : 5);
  }
  int status = 0;
  BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
  BOOST_TEST(WIFSIGNALED(status));
  BOOST_TEST(WTERMSIG(status) == SIGBUS);
}

#endif

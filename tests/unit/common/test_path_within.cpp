// Where a local path lies against a root (common/path_within.hpp), on both platforms (this test
// runs on Linux and under Wine): what lexically_relative says where names are spelled alike, and
// names compared as the platform's file systems compare them: exactly on POSIX, without regard to
// case on Windows, drive letters and either separator included.
#define BOOST_TEST_MODULE path_within
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <string>

#include "common/path_within.hpp"

namespace fs = std::filesystem;
namespace posix = ferry::posix;

namespace {

std::string rel(const fs::path& path, const fs::path& root) { return posix::relative_to(path, root).generic_string(); }

#ifdef _WIN32
constexpr bool kWindows = true;
const fs::path kRoot = L"C:\\Users\\Me\\proj";
#else
constexpr bool kWindows = false;
const fs::path kRoot = "/home/me/proj";
#endif

}  // namespace

BOOST_AUTO_TEST_CASE(what_lexically_relative_says_where_names_are_spelled_alike) {
  BOOST_TEST(rel(kRoot / "src" / "a.py", kRoot) == "src/a.py");
  BOOST_TEST(rel(kRoot, kRoot) == ".");
  BOOST_TEST(rel(kRoot.parent_path() / "other", kRoot) == "../other");
  BOOST_TEST(posix::is_within(kRoot / "src", kRoot));
  BOOST_TEST(posix::is_within(kRoot, kRoot));
  BOOST_TEST(!posix::is_within(kRoot.parent_path(), kRoot));
  BOOST_TEST(!posix::is_within(kRoot.parent_path() / "proj2", kRoot));  // a longer name is another name
}

BOOST_AUTO_TEST_CASE(names_that_differ_in_case_match_on_windows_only) {
  const fs::path other_case = kWindows ? fs::path(L"c:\\users\\me\\PROJ\\src\\a.py") : fs::path("/home/me/PROJ/src/a.py");
  BOOST_TEST(posix::is_within(other_case, kRoot) == kWindows);
  if (kWindows) BOOST_TEST(rel(other_case, kRoot) == "src/a.py");  // the rest keeps its own spelling
  else BOOST_TEST(rel(other_case, kRoot) == "../PROJ/src/a.py");
  BOOST_TEST(posix::names_match(fs::path("Data.csv"), fs::path("data.csv")) == kWindows);
  BOOST_TEST(posix::names_match(fs::path("a.py"), fs::path("a.py")));
  BOOST_TEST(!posix::names_match(fs::path("a.py"), fs::path("b.py")));
}

#ifdef _WIN32
BOOST_AUTO_TEST_CASE(either_separator_and_unc_roots) {
  BOOST_TEST(rel(L"C:/Users/Me/proj/x/y.txt", kRoot) == "x/y.txt");
  BOOST_TEST(posix::is_within(L"\\\\Server\\Share\\proj\\a.py", L"\\\\server\\share\\proj"));
  BOOST_TEST(!posix::is_within(L"D:\\Users\\Me\\proj\\a.py", kRoot));  // another drive
  BOOST_TEST(posix::is_within(L"c:\\USERS\\me\\proj", kRoot));
}
#endif

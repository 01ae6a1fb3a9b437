// Names a Windows file system cannot hold: device names (with any extension, any case), the
// forbidden characters and control characters, trailing dots and spaces, names that are not
// UTF-8; and names that differ only in case, files and folders, found with the folding
// documented in windows_names.hpp. Pure logic: runs on Linux and under Wine alike.
#define BOOST_TEST_MODULE windows_names
#include <boost/test/unit_test.hpp>

#include <random>

#include "helper/sync/windows_names.hpp"

using namespace ferry::sync;
using Groups = std::vector<std::vector<std::string>>;

namespace {

bool refused(std::string_view name) { return windows_name_problem(name).has_value(); }
std::string why(std::string_view name) { return windows_name_problem(name).value_or("(fine)"); }

Groups clashes_of(std::vector<std::string> paths) { return case_clashes(paths); }

}  // namespace

BOOST_AUTO_TEST_CASE(device_names_are_refused_with_any_extension_and_case) {
  for (const char* name : {"CON", "con", "Prn", "aux", "NUL", "aux.py", "AUX.tar.gz", "nul.txt", "com1", "COM9.log", "lpt1",
                           "Lpt0.x", "com0", "conin$", "CONOUT$.txt", "aux .py", "COM\xc2\xb9", "lpt\xc2\xb3.txt"})
    BOOST_TEST(refused(name), name);
  BOOST_TEST(why("aux.py") == "'aux.py': AUX is a device name on Windows (with any extension too)");
  BOOST_TEST(why("com1") == "'com1': COM1 is a device name on Windows");
  // Names that only start or end like one are fine.
  for (const char* name : {"auxiliary.py", "console", "nul_x", "com10", "lpt", "comx", "my.aux", "x.con", ".aux", "COM\xc2\xb9x",
                           "com\xc2\xb4", "_aux"})
    BOOST_TEST(!refused(name), name << ": " << why(name));
}

BOOST_AUTO_TEST_CASE(forbidden_characters_and_control_characters_are_refused) {
  for (const char c : std::string_view("<>:\"/\\|?*"))
    BOOST_TEST(refused(std::string("a") + c + "b"), c);
  BOOST_TEST(why("a:b") == "'a:b': Windows does not allow ':' in a name");
  for (int c = 1; c < 0x20; ++c) BOOST_TEST(refused(std::string("a") + static_cast<char>(c)), c);
  BOOST_TEST(refused(std::string_view("a\0b", 3)));
  // The control character is shown, not written into the message.
  BOOST_TEST(why("tab\there") == "'tab\\x09here': Windows does not allow control character 0x09 in a name");
  // What Windows does allow.
  for (const char* name : {"a b.py", "a;b", "a,b", "#1", "%20", "[x]", "{y}", "a=b+c", "x\x7fy", "caf\xc3\xa9", "\xe2\x9c\x93",
                           "\xf0\x9f\x98\x80.png", "-", "~", "..x", ".gitignore", "a.b.c"})
    BOOST_TEST(!refused(name), name << ": " << why(name));
}

BOOST_AUTO_TEST_CASE(trailing_dots_and_spaces_and_non_names_are_refused) {
  BOOST_TEST(why("x.") == "'x.': Windows drops a trailing dot from a name");
  BOOST_TEST(why("x ") == "'x ': Windows drops a trailing space from a name");
  for (const char* name : {"x..", "a.b.", "x. ", "", ".", ".."}) BOOST_TEST(refused(name), name);
  BOOST_TEST(!refused(" x"));  // a leading space is kept
}

BOOST_AUTO_TEST_CASE(names_that_are_not_utf8_are_refused) {
  for (const char* name : {"caf\xe9", "\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "a\xff"})
    BOOST_TEST(refused(name), name);
  BOOST_TEST(why("caf\xe9") == "'caf\\xe9': not UTF-8, and Windows names are Unicode: it could only be written changed");
}

BOOST_AUTO_TEST_CASE(case_is_folded_for_ascii_latin_greek_and_cyrillic) {
  BOOST_TEST(fold_case("Data.CSV") == fold_case("data.csv"));
  BOOST_TEST(fold_case("\xc3\x89t\xc3\xa9") == fold_case("\xc3\xa9T\xc3\x89"));                    // Été / éTÉ
  BOOST_TEST(fold_case("\xc5\x81\xc3\xb3" "d\xc5\xba") == fold_case("\xc5\x82\xc3\x93" "D\xc5\xb9"));    // Łódź / łÓDŹ
  BOOST_TEST(fold_case("\xce\xa3\xce\xbf\xcf\x86\xce\xaf\xce\xb1") == fold_case("\xcf\x83\xce\x9f\xce\xa6\xce\x8a\xce\x91"));  // Σοφία / σΟΦΊΑ
  BOOST_TEST(fold_case("\xcf\x82") == fold_case("\xcf\x83"));                                      // final and medial sigma
  BOOST_TEST(fold_case("\xd0\x9c\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0") == fold_case("\xd0\xbc\xd0\x9e\xd0\xa1\xd0\x9a\xd0\x92\xd0\x90"));  // Москва
  BOOST_TEST(fold_case("\xd1\x91") == fold_case("\xd0\x81"));                                      // ё / Ё
  BOOST_TEST(fold_case("\xc3\xbf") == fold_case("\xc5\xb8"));                                      // ÿ / Ÿ
  // Different letters stay different; ß has no one-letter upper case; no normalization.
  BOOST_TEST(fold_case("a") != fold_case("b"));
  BOOST_TEST(fold_case("\xc3\x9f") != fold_case("ss"));
  BOOST_TEST(fold_case("\xc3\xa9") != fold_case("e\xcc\x81"));
  BOOST_TEST(fold_case("\xc3\xa9") != fold_case("e"));
  BOOST_TEST(fold_case("a\xffZ") == "A\xffZ");  // bytes that are not UTF-8 kept as they are
  BOOST_TEST(fold_case("x\xc3\x97y") == "X\xc3\x97Y");  // × is no letter
}

BOOST_AUTO_TEST_CASE(names_differing_only_in_case_are_grouped) {
  BOOST_TEST((clashes_of({"Data.csv", "data.csv", "other.csv"}) == Groups{{"Data.csv", "data.csv"}}));
  BOOST_TEST((clashes_of({"a/README", "a/readme", "a/ReadMe", "b/readme"}) == Groups{{"a/README", "a/ReadMe", "a/readme"}}));
  BOOST_TEST(clashes_of({"x", "y", "dir/x", "dir/X2", "x/X"}).empty());
  BOOST_TEST(clashes_of({"same", "same"}).empty());  // one name given twice is no clash
  // Folders: both land in one folder on Windows. Reported where the clash starts, once.
  BOOST_TEST((clashes_of({"A/x", "a/y"}) == Groups{{"A", "a"}}));
  BOOST_TEST((clashes_of({"A/x", "a/x", "A/sub/f", "a/sub/f"}) == Groups{{"A", "a"}}));
  BOOST_TEST((clashes_of({"A/x", "A/X", "a/x"}) == Groups{{"A", "a"}, {"A/X", "A/x", "a/x"}}));
  BOOST_TEST((clashes_of({"p/Out", "p/out/log.txt"}) == Groups{{"p/Out", "p/out"}}));  // a file and a folder
  BOOST_TEST((clashes_of({"\xc3\x89t\xc3\xa9.txt", "\xc3\xa9t\xc3\xa9.txt"}) == Groups{{"\xc3\x89t\xc3\xa9.txt", "\xc3\xa9t\xc3\xa9.txt"}}));
}

BOOST_AUTO_TEST_CASE(a_big_tree_with_one_clash_finds_just_it) {
  std::vector<std::string> paths;
  std::mt19937 rng(5);
  for (int i = 0; i < 20000; ++i) paths.push_back("d" + std::to_string(i % 97) + "/sub/f" + std::to_string(i) + ".bin");
  paths.push_back("d3/SUB/extra.bin");
  std::shuffle(paths.begin(), paths.end(), rng);
  BOOST_TEST((case_clashes(paths) == Groups{{"d3/SUB", "d3/sub"}}));
}

BOOST_AUTO_TEST_CASE(path_problems_name_the_part_that_is_wrong) {
  const std::vector<std::string> paths{"ok.py", "aux.py", "a:b", "x.", "Data.csv", "data.csv", "sub/nul/f.txt", "sub/fine.txt",
                                       "Out/a", "out/b", "", "dir.", "dir./inner"};
  const auto problems = windows_path_problems(paths);
  BOOST_TEST(problems.size() == 10u);
  for (const char* fine : {"ok.py", "sub/fine.txt", ""}) BOOST_TEST(!problems.contains(fine), fine);
  BOOST_TEST(problems.at("aux.py") == "'aux.py': AUX is a device name on Windows (with any extension too)");
  BOOST_TEST(problems.at("a:b") == "'a:b': Windows does not allow ':' in a name");
  BOOST_TEST(problems.at("x.") == "'x.': Windows drops a trailing dot from a name");
  BOOST_TEST(problems.at("Data.csv") == "'Data.csv' and 'data.csv' differ only in case: on Windows they are one name");
  BOOST_TEST(problems.at("data.csv") == problems.at("Data.csv"));
  BOOST_TEST(problems.at("sub/nul/f.txt") == "in 'sub/nul': 'nul': NUL is a device name on Windows");
  BOOST_TEST(problems.at("Out/a") == "in 'Out': 'Out' and 'out' differ only in case: on Windows they are one name");
  BOOST_TEST(problems.contains("out/b"));
  BOOST_TEST(problems.at("dir./inner") == "in 'dir.': 'dir.': Windows drops a trailing dot from a name");
}

// shell_words: the one quoting rule, round-tripped through a real /bin/sh (what sh gives back is
// exactly what was quoted, and nothing in a word runs), and the one splitting rule for settings
// (no expansions, no operators; a shell refused as an interpreter).
#define BOOST_TEST_MODULE shell_words
#include <boost/test/unit_test.hpp>

#include <filesystem>

#include "protocol/shell_words.hpp"
#include "tests/support/sh_words.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::protocol;
using Words = std::vector<std::string>;

namespace {

// Words meant to break a careless quoter; `marker` is a file any of them would create if run.
Words hostile_words(const std::string& marker) {
  return {"plain",
          "with space",
          "  leading and trailing  ",
          "",
          "it's",
          "''",
          "'\\''",
          "\"double\"",
          "back\\slash\\",
          "\\'",
          "line\nbreak\n",
          "tab\there",
          "$HOME",
          "${IFS}",
          "$(touch " + marker + ")",
          "`touch " + marker + "`",
          ";touch " + marker,
          "&& touch " + marker,
          "| touch " + marker,
          "> " + marker,
          "touch${IFS}" + marker,
          "*",
          "?",
          "[a-z]",
          "~",
          "~/x",
          "-n",
          "--",
          "#not a comment",
          "!bang",
          "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x99\x82",
          "\x01\x7f\xff"};
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_word_comes_back_from_sh_exactly) {
  ferry::test::TempDir dir("ferry-shell-words");
  const std::string marker = (dir / "MARKER").string();
  for (const auto& word : hostile_words(marker)) {
    // One word at a time: a failure names the word.
    auto r = ferry::test::run_sh("printf '%s\\0' " + shell_quote(word), dir.path().string());
    BOOST_TEST(r.exit_status == 0);
    BOOST_TEST((ferry::test::nul_words(r.out) == Words{word}), "word: [" << word << "]");
  }
  BOOST_TEST(!std::filesystem::exists(marker));
}

BOOST_AUTO_TEST_CASE(a_command_line_gives_back_its_argv) {
  ferry::test::TempDir dir("ferry-shell-words");
  const std::string marker = (dir / "MARKER").string();
  Words argv{"printf", "%s\\0"};
  const Words words = hostile_words(marker);
  argv.insert(argv.end(), words.begin(), words.end());
  auto r = ferry::test::run_sh(shell_command(argv), dir.path().string());
  BOOST_TEST(r.exit_status == 0);
  BOOST_TEST(ferry::test::nul_words(r.out) == words, boost::test_tools::per_element());
  BOOST_TEST(!std::filesystem::exists(marker));
  // And split_words reads the same line back into the same argv.
  auto back = split_words(shell_command(argv));
  BOOST_TEST_REQUIRE(back.has_value());
  BOOST_TEST(*back == argv, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(quoting_forms) {
  BOOST_TEST(shell_quote("") == "''");
  BOOST_TEST(shell_quote("it's") == "'it'\\''s'");
  BOOST_TEST(shell_quote("$x") == "'$x'");
  BOOST_TEST(shell_quote_home("~") == "\"$HOME\"");
  BOOST_TEST(shell_quote_home("~/a b") == "\"$HOME\"/'a b'");
  BOOST_TEST(shell_quote_home("~user/x") == "'~user/x'");
  BOOST_TEST(shell_quote_home("/x/~/y") == "'/x/~/y'");
  BOOST_TEST(shell_command({}) == "");
}

BOOST_AUTO_TEST_CASE(home_paths_expand_to_home_and_nothing_else) {
  auto r = ferry::test::run_sh("HOME='/h o/$(x)'; printf '%s\\0' " + shell_quote_home("~/a $(b) c") + " " + shell_quote_home("~"));
  BOOST_TEST((ferry::test::nul_words(r.out) == Words{"/h o/$(x)/a $(b) c", "/h o/$(x)"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(split_words_expands_nothing) {
  BOOST_TEST(*split_words("/opt/conda/bin/python -u") == (Words{"/opt/conda/bin/python", "-u"}));
  BOOST_TEST(*split_words("sh -c touch${IFS}MARKER") == (Words{"sh", "-c", "touch${IFS}MARKER"}));
  BOOST_TEST(*split_words("python3;touch MARKER") == (Words{"python3;touch", "MARKER"}));
  BOOST_TEST(*split_words("python3 $(touch MARKER)") == (Words{"python3", "$(touch", "MARKER)"}));
  BOOST_TEST(*split_words("python3 `touch MARKER`") == (Words{"python3", "`touch", "MARKER`"}));
  BOOST_TEST(*split_words("python3 *.py >out 2>&1 | x && y") == (Words{"python3", "*.py", ">out", "2>&1", "|", "x", "&&", "y"}));
  BOOST_TEST(*split_words("\"$(x)\" '$y' \\$z") == (Words{"$(x)", "$y", "$z"}));
  BOOST_TEST(*split_words("''") == (Words{""}));
  BOOST_TEST(!split_words("a 'b").has_value());
  BOOST_TEST(!split_words("a \\").has_value());
}

BOOST_AUTO_TEST_CASE(an_interpreter_is_words_and_never_a_shell) {
  BOOST_TEST(*interpreter_words("conda run -n x python") == (Words{"conda", "run", "-n", "x", "python"}));
  BOOST_TEST(*interpreter_words("/usr/bin/env python3") == (Words{"/usr/bin/env", "python3"}));
  BOOST_TEST(*interpreter_words("python3 -I") == (Words{"python3", "-I"}));
  BOOST_TEST(*interpreter_words("'~/my venv/bin/python'") == (Words{"~/my venv/bin/python"}));
  BOOST_TEST(*interpreter_words("/opt/shells/python") == (Words{"/opt/shells/python"}));
  for (const char* bad : {"sh -c touch${IFS}MARKER", "/bin/sh -c x", "bash -lc python", "/usr/bin/env sh -c x",
                          "env -S 'sh -c x'", "conda run -n x bash -c y", "busybox sh", "zsh", "dash"}) {
    auto r = interpreter_words(bad);
    BOOST_TEST(!r.has_value(), bad);
    if (!r) BOOST_TEST(r.error().find("shell") != std::string::npos);
  }
  BOOST_TEST(!interpreter_words("   ").has_value());
  BOOST_TEST(!interpreter_words("python 'x").has_value());
}

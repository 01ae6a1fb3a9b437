// Code lenses from text: main guards written either way round, training configs told apart from
// other JSON, ferry.json's own lenses, nothing for anything else.
#define BOOST_TEST_MODULE code_lens
#include <boost/test/unit_test.hpp>

#include "helper/server/code_lens.hpp"

using namespace ferry::server;

BOOST_AUTO_TEST_CASE(documents_are_told_apart) {
  BOOST_TEST((document_kind("/p/ferry.json", "{}") == DocumentKind::project_file));
  BOOST_TEST((document_kind("/p/a.py", "") == DocumentKind::python));
  BOOST_TEST((document_kind("/p/cfg.json", R"({"model": {}, "optimizer": {}})") == DocumentKind::train_config));
  BOOST_TEST((document_kind("/p/cfg.json", R"({"model": {}})") == DocumentKind::other));
  BOOST_TEST((document_kind("/p/package.json", R"({"name": "x"})") == DocumentKind::other));
  BOOST_TEST((document_kind("/p/broken.json", R"({"model": )") == DocumentKind::other));
  BOOST_TEST((document_kind("/p/notes.md", "") == DocumentKind::other));
}

BOOST_AUTO_TEST_CASE(main_guards_get_run_and_debug) {
  const std::string text =
      "import x\n"
      "if __name__ == '__main__':\n"
      "    pass\n"
      "    if __name__ == \"__main__\":  # indented: not a module's guard\n"
      "if \"__main__\" == __name__ :\n"
      "if __name__ == '__main__' :  # trailing\n"
      "if __name__ == '__main__\":\n";  // mismatched quotes
  auto lenses = code_lenses(DocumentKind::python, text, "file:///p/a.py", "gpu-box");
  BOOST_REQUIRE_EQUAL(lenses.size(), 6u);
  BOOST_TEST(lenses[0].line == 1);
  BOOST_TEST(lenses[0].title == "\u25B6 Run on gpu-box");
  BOOST_TEST(lenses[0].command == "ferry.run");
  BOOST_TEST(lenses[0].arguments.dump() == "[\"file:///p/a.py\"]");
  BOOST_TEST(lenses[1].command == "ferry.debug");
  BOOST_TEST(lenses[2].line == 4);
  BOOST_TEST(lenses[4].line == 5);
  BOOST_TEST(code_lenses(DocumentKind::python, "print(1)\n", "u", "h").empty());
}

BOOST_AUTO_TEST_CASE(configs_get_their_lenses_on_the_first_line) {
  auto train = code_lenses(DocumentKind::train_config, "{}", "u", "h");
  BOOST_REQUIRE_EQUAL(train.size(), 1u);
  BOOST_TEST(train[0].command == "ferry.train");
  BOOST_TEST(train[0].line == 0);
  auto project = code_lenses(DocumentKind::project_file, "{}", "u", "h");
  BOOST_REQUIRE_EQUAL(project.size(), 2u);
  BOOST_TEST(project[0].command == "ferry.sync");
  BOOST_TEST(project[1].command == "ferry.doctor");
  auto j = to_json(project);
  BOOST_TEST(j[0]["range"]["start"]["line"] == 0);
  BOOST_TEST(j[0]["command"]["title"] == "Sync now");
}

BOOST_AUTO_TEST_CASE(launch_entries_get_a_lens_on_their_own_line) {
  const std::string text =
      "{\n"
      "  \"name\": \"p\",\n"
      "  \"launch\": [\n"
      "    {\"name\": \"train small\", \"script\": \"train.py\"},\n"
      "    {\"name\": \"dbg\", \"kind\": \"debug\", \"module\": \"pkg.cli\"},\n"
      "    {\n"
      "      \"name\": \"mlp\", \"kind\": \"train\", \"config\": \"cfg.json\"\n"
      "    },\n"
      "    {\"kind\": \"run\"}\n"
      "  ]\n"
      "}\n";
  auto lenses = code_lenses(DocumentKind::project_file, text, "file:///p/ferry.json", "box");
  BOOST_REQUIRE_EQUAL(lenses.size(), 5u);  // Sync, Doctor and three named entries
  BOOST_TEST(lenses[2].line == 3);
  BOOST_TEST(lenses[2].title == "\u25B6 Run train small on box");
  BOOST_TEST(lenses[2].command == "ferry.run");
  BOOST_TEST(lenses[2].arguments.dump() == R"([{"launch":"train small","uri":"file:///p/ferry.json"}])");
  BOOST_TEST(lenses[3].line == 4);
  BOOST_TEST(lenses[3].command == "ferry.debug");
  BOOST_TEST(lenses[4].line == 5);
  BOOST_TEST(lenses[4].command == "ferry.train");
  // A broken file still gets its first-line lenses.
  BOOST_TEST(code_lenses(DocumentKind::project_file, "{\"launch\": [", "u", "h").size() == 2u);
}

// An untrusted project's files: a ferry.json nested past the parse's limit and a Python line of
// 300,000 blanks after "if" (std::regex recurses per character) still get their lenses, no crash.
BOOST_AUTO_TEST_CASE(hostile_documents_get_lenses_without_crashing) {
  const std::string deep = "{\"launch\": [{\"name\": \"a\", \"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}]}";
  BOOST_TEST(code_lenses(DocumentKind::project_file, deep, "u", "h").size() == 2u);
  const std::string blanks = "if" + std::string(300000, ' ') + "__name__ == '__main__':\nif __name__ == '__main__':\n";
  auto lenses = code_lenses(DocumentKind::python, blanks, "u", "h");
  BOOST_REQUIRE_EQUAL(lenses.size(), 2u);
  BOOST_TEST(lenses[0].line == 1);
}

// `ferry ide vscode`'s one merged settings key: added to a new or existing settings.json with
// its comments kept, left alone when the user set another value, and an unreadable file refused.
#define BOOST_TEST_MODULE settings_key
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "helper/ide/settings_key.hpp"

using namespace ferry::ide;
const std::string kKey(kInterpreterKey), kValue(kVenvInterpreter);

BOOST_AUTO_TEST_CASE(new_file) {
  auto m = merge_settings_key("", kKey, kValue);
  BOOST_TEST_REQUIRE(m.has_value());
  BOOST_TEST(m->changed);
  BOOST_TEST(nlohmann::json::parse(m->text)[kKey] == kValue);
}

BOOST_AUTO_TEST_CASE(existing_file_keeps_comments_and_keys) {
  const std::string old = "// my settings {\n{\n  /* tabs */ \"editor.tabSize\": 4, // four\n  \"files.exclude\": {\"x\": true},\n}\n";
  auto m = merge_settings_key(old, kKey, kValue);
  BOOST_TEST_REQUIRE(m.has_value(), (m ? "" : m.error()));
  BOOST_TEST(m->changed);
  BOOST_TEST(m->text.find("// my settings {\n{\n  \"python.defaultInterpreterPath\"") == 0u, m->text);
  BOOST_TEST(m->text.find("/* tabs */ \"editor.tabSize\": 4, // four") != std::string::npos);
  // Merging again changes nothing.
  auto again = merge_settings_key(m->text, kKey, kValue);
  BOOST_TEST_REQUIRE(again.has_value());
  BOOST_TEST(!again->changed);
  BOOST_TEST(again->text == m->text);
  auto empty_object = merge_settings_key("{}", kKey, kValue);
  BOOST_TEST(nlohmann::json::parse(empty_object->text)[kKey] == kValue);
}

BOOST_AUTO_TEST_CASE(users_value_is_kept_and_garbage_refused) {
  auto m = merge_settings_key("{\"python.defaultInterpreterPath\": \"/opt/py\"}", kKey, kValue);
  BOOST_TEST_REQUIRE(m.has_value());
  BOOST_TEST(!m->changed);
  BOOST_TEST(m->kept_value == "\"/opt/py\"");
  BOOST_TEST(!merge_settings_key("[1, 2]", kKey, kValue).has_value());
  BOOST_TEST(!merge_settings_key("{\"a\": ", kKey, kValue).has_value());
}

// Found by fuzz_env_probe: the parser stopped at a NUL (so the text read as `{}`) while the '{'
// to insert after was found past it; and a line comment may end at a lone '\r'.
BOOST_AUTO_TEST_CASE(a_nul_byte_is_refused_and_a_cr_ends_a_line_comment) {
  using namespace std::string_literals;
  const std::string with_nul = "\r//\0{\n}\n\0banner\nFERRY {\"a\": 1}\n"s;
  auto refused = merge_settings_key(with_nul, kKey, kValue);
  BOOST_TEST_REQUIRE(!refused.has_value());
  BOOST_TEST(refused.error().find("NUL") != std::string::npos, refused.error());
  auto m = merge_settings_key("// mine\r{\"editor.tabSize\": 2}", kKey, kValue);
  BOOST_TEST_REQUIRE(m.has_value(), (m ? "" : m.error()));
  BOOST_TEST(m->changed);
  auto j = nlohmann::json::parse(m->text, nullptr, true, true);
  BOOST_TEST(j[kKey] == kValue);
  BOOST_TEST(j["editor.tabSize"] == 2);
}

// load_project (every CLI command's and the server's way to ferry.json) on an untrusted project's
// file nested 100,000 levels deep, or with a path of 300 KB: refused, not a crash.
#define BOOST_TEST_MODULE project_config_depth
#include <boost/test/unit_test.hpp>

#include <string>

#include "helper/deploy/project_config.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::deploy;

BOOST_AUTO_TEST_CASE(a_file_nested_too_deep_is_refused_with_its_place) {
  ferry::test::TempDir dir("ferry-deep-project");
  const std::string deep = "{\"name\": \"p\",\n \"exclude\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  ferry::test::write_file(dir / "ferry.json", deep);
  auto config = load_project(dir.path());
  BOOST_TEST_REQUIRE(!config.has_value());
  BOOST_TEST(config.error().file == (dir / "ferry.json").string());
  // The root is the first level: the 256th '[' is one too many.
  BOOST_TEST(config.error().message == "invalid JSON at line 2, column 268: nested deeper than 256 levels",
             config.error().message);
}

BOOST_AUTO_TEST_CASE(the_limit_itself_still_loads_as_far_as_the_validator) {
  ferry::test::TempDir dir("ferry-deep-project");
  // 256 levels in all parse; the validator then refuses the shape, with a pointer.
  ferry::test::write_file(dir / "ferry.json", "{\"exclude\": " + std::string(255, '[') + std::string(255, ']') + "}");
  auto config = load_project(dir.path());
  BOOST_TEST_REQUIRE(!config.has_value());
  BOOST_TEST(config.error().message.find("invalid JSON") == std::string::npos, config.error().message);
  BOOST_TEST(config.error().pointer.starts_with("/exclude"), config.error().pointer);
}

// Not depth but the same crash: a 300 KB path reached std::regex, which recurses per character
// (SIGSEGV in `ferry sync` and ferry serve). Refused by the validator like any bad path.
BOOST_AUTO_TEST_CASE(a_path_too_long_for_the_pattern_is_refused_not_a_crash) {
  ferry::test::TempDir dir("ferry-long-path");
  ferry::test::write_file(dir / "ferry.json", "{\"mappings\": [{\"local\": \"" + std::string(300000, 'a') + "\", \"remote\": \"/r\"}]}");
  auto config = load_project(dir.path());
  BOOST_TEST_REQUIRE(!config.has_value());
  BOOST_TEST(config.error().pointer == "/mappings/0/local");
}

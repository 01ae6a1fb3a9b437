// launch_json: merging keeps other configurations, replaces one of the same name, keeps VS Code's
// comments, refuses what it cannot read; the write is atomic and leaves no temp file.
#define BOOST_TEST_MODULE launch_json
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "helper/debug/launch_json.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::debug;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {
const json kAttach = {{"name", "ferry: attach (p)"}, {"type", "debugpy"}, {"request", "attach"},
                      {"connect", {{"host", "127.0.0.1"}, {"port", 5678}}}};

using ferry::test::TempDir;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

BOOST_AUTO_TEST_CASE(new_file_holds_just_ours) {
  auto merged = merge_launch_configuration("", kAttach);
  BOOST_REQUIRE(merged);
  auto doc = json::parse(merged->text);
  BOOST_TEST(doc["version"] == "0.2.0");
  BOOST_REQUIRE_EQUAL(doc["configurations"].size(), 1u);
  BOOST_TEST(doc["configurations"][0] == kAttach);
  BOOST_TEST(!merged->replaced);
}

BOOST_AUTO_TEST_CASE(others_are_kept_and_ours_replaced_in_place) {
  const std::string existing = R"json({
    "version": "0.2.0",
    "configurations": [
      {"name": "Python: Current File", "type": "debugpy", "request": "launch", "program": "${file}"},
      {"name": "ferry: attach (p)", "type": "debugpy", "request": "attach", "connect": {"port": 1}},
      {"name": "C++", "type": "cppdbg", "request": "launch"}
    ],
    "compounds": [{"name": "both", "configurations": ["C++"]}]
  })json";
  auto merged = merge_launch_configuration(existing, kAttach);
  BOOST_REQUIRE(merged);
  BOOST_TEST(merged->replaced);
  auto doc = json::parse(merged->text);
  BOOST_REQUIRE_EQUAL(doc["configurations"].size(), 3u);
  BOOST_TEST(doc["configurations"][0]["name"] == "Python: Current File");
  BOOST_TEST(doc["configurations"][1]["connect"]["port"] == 5678);
  BOOST_TEST(doc["configurations"][2]["type"] == "cppdbg");
  BOOST_TEST(doc["compounds"][0]["name"] == "both");
}

BOOST_AUTO_TEST_CASE(comments_are_kept) {
  const std::string existing =
      "{\n  // Use IntelliSense to learn about possible attributes.\n  \"version\": \"0.2.0\",\n"
      "  /* mine */ \"configurations\": [{\"name\": \"x\", \"type\": \"node\"}]\n}\n";
  auto merged = merge_launch_configuration(existing, kAttach);
  BOOST_REQUIRE(merged);
  BOOST_TEST(merged->text.find("// Use IntelliSense to learn about possible attributes.") != std::string::npos, merged->text);
  BOOST_TEST(merged->text.find("/* mine */") != std::string::npos, merged->text);
  auto doc = json::parse(merged->text, nullptr, true, /*ignore_comments=*/true);
  BOOST_TEST(doc["configurations"].size() == 2u);
  BOOST_TEST(doc["configurations"][1] == kAttach);
}

BOOST_AUTO_TEST_CASE(unreadable_files_are_refused) {
  BOOST_TEST(!merge_launch_configuration("{\"configurations\": [1,,]}", kAttach));
  BOOST_TEST(!merge_launch_configuration("{\"configurations\": [] /* unterminated", kAttach));
  BOOST_TEST(!merge_launch_configuration("[]", kAttach));
  BOOST_TEST(!merge_launch_configuration("{\"configurations\": {}}", kAttach));
  BOOST_TEST(!merge_launch_configuration("", json{{"type", "debugpy"}}));
}

BOOST_AUTO_TEST_CASE(write_creates_then_merges_atomically) {
  TempDir dir("ferry-launch");
  auto first = write_launch_configuration(dir.path(), kAttach);
  BOOST_REQUIRE_MESSAGE(first.has_value(), (first ? std::string() : first.error()));
  BOOST_TEST(first->path == dir.path() / ".vscode" / "launch.json");
  {
    std::ofstream out(first->path);
    out << R"({"version": "0.2.0", "configurations": [{"name": "mine", "type": "node"}]})";
  }
  auto second = write_launch_configuration(dir.path(), kAttach);
  BOOST_REQUIRE(second);
  auto doc = json::parse(slurp(second->path));
  BOOST_REQUIRE_EQUAL(doc["configurations"].size(), 2u);
  BOOST_TEST(doc["configurations"][0]["name"] == "mine");
  BOOST_TEST(doc["configurations"][1]["name"] == "ferry: attach (p)");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path() / ".vscode")) ++entries;
  BOOST_TEST(entries == 1);  // no temp file left behind

  {
    std::ofstream out(first->path);
    out << "not json";
  }
  auto refused = write_launch_configuration(dir.path(), kAttach);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(slurp(first->path) == "not json");
}

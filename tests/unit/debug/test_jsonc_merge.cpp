// jsonc_merge: named entries merged into a JSON-with-comments file by text edits. The user's
// comments, entries, order, trailing commas and indentation stay byte for byte; ferry's entries
// are replaced where they stand (not duplicated) or appended; a second merge changes nothing.
#define BOOST_TEST_MODULE jsonc_merge
#include <boost/test/unit_test.hpp>

#include "helper/debug/jsonc_merge.hpp"

using namespace ferry::debug;
using ojson = nlohmann::ordered_json;
using Names = std::vector<std::string>;

namespace {

JsoncMergeRequest tasks(std::vector<ojson> entries) {
  return {"tasks", "label", {{"version", "2.0.0"}}, std::move(entries)};
}

const ojson kA = {{"label", "ferry: a"}, {"type", "shell"}, {"args", {"run", "a"}}};
const ojson kB = {{"label", "ferry: b"}, {"type", "shell"}};

JsoncMerge merged(std::string_view existing, const JsoncMergeRequest& r) {
  auto m = merge_named_entries(existing, r);
  BOOST_REQUIRE_MESSAGE(m.has_value(), (m ? std::string() : m.error()));
  // Whatever it wrote reads back, and merging again is a no-op.
  auto again = merge_named_entries(m->text, r);
  BOOST_REQUIRE(again.has_value());
  BOOST_TEST(again->text == m->text);
  BOOST_TEST(again->added.empty());
  BOOST_TEST(again->replaced.empty());
  return *m;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_new_file_is_the_skeleton_and_the_entries) {
  auto m = merged("", tasks({kA, kB}));
  BOOST_TEST(m.text ==
             "{\n"
             "    \"version\": \"2.0.0\",\n"
             "    \"tasks\": [\n"
             "        {\n"
             "            \"label\": \"ferry: a\",\n"
             "            \"type\": \"shell\",\n"
             "            \"args\": [\n"
             "                \"run\",\n"
             "                \"a\"\n"
             "            ]\n"
             "        },\n"
             "        {\n"
             "            \"label\": \"ferry: b\",\n"
             "            \"type\": \"shell\"\n"
             "        }\n"
             "    ]\n"
             "}\n");
  BOOST_TEST(m.added == (Names{"ferry: a", "ferry: b"}));
}

BOOST_AUTO_TEST_CASE(comments_entries_and_trailing_commas_are_kept_ours_replaced_in_place) {
  const std::string existing =
      "{\n"
      "  // my tasks\n"
      "  \"version\": \"2.0.0\",\n"
      "  \"tasks\": [\n"
      "    {\"label\": \"mine\", \"type\": \"shell\"}, // keep me\n"
      "    {\"label\": \"ferry: a\", \"type\": \"process\"},\n"
      "    /* last */ {\"label\": \"also mine\"},\n"
      "  ]\n"
      "}\n";
  auto m = merged(existing, tasks({kA, kB}));
  BOOST_TEST(m.text ==
             "{\n"
             "  // my tasks\n"
             "  \"version\": \"2.0.0\",\n"
             "  \"tasks\": [\n"
             "    {\"label\": \"mine\", \"type\": \"shell\"}, // keep me\n"
             "    {\n"
             "      \"label\": \"ferry: a\",\n"
             "      \"type\": \"shell\",\n"
             "      \"args\": [\n"
             "        \"run\",\n"
             "        \"a\"\n"
             "      ]\n"
             "    },\n"
             "    /* last */ {\"label\": \"also mine\"},\n"
             "    {\n"
             "      \"label\": \"ferry: b\",\n"
             "      \"type\": \"shell\"\n"
             "    },\n"
             "  ]\n"
             "}\n");
  BOOST_TEST(m.replaced == (Names{"ferry: a"}));
  BOOST_TEST(m.added == (Names{"ferry: b"}));
  BOOST_TEST(m.existing_names == (Names{"mine", "ferry: a", "also mine"}));
}

BOOST_AUTO_TEST_CASE(an_entry_already_right_is_left_as_the_user_formatted_it) {
  const std::string existing = "{\"version\": \"2.0.0\", \"tasks\": [{\"type\": \"shell\", \"label\": \"ferry: b\"}]}";
  auto m = merged(existing, tasks({kB}));
  BOOST_TEST(m.text == existing);  // same value, other key order and layout: untouched
  BOOST_TEST(m.unchanged == (Names{"ferry: b"}));
}

BOOST_AUTO_TEST_CASE(a_comment_after_the_last_entry_stays_with_it) {
  const std::string existing =
      "{\n"
      "\t\"tasks\": [\n"
      "\t\t{\"label\": \"x\"} // x\n"
      "\t] // end\n"
      "}\n";
  auto m = merged(existing, tasks({kB}));
  BOOST_TEST(m.text ==
             "{\n"
             "\t\"tasks\": [\n"
             "\t\t{\"label\": \"x\"}, // x\n"
             "\t\t{\n"
             "\t\t\t\"label\": \"ferry: b\",\n"
             "\t\t\t\"type\": \"shell\"\n"
             "\t\t}\n"
             "\t], // end\n"
             "\t\"version\": \"2.0.0\"\n"
             "}\n");
}

BOOST_AUTO_TEST_CASE(missing_array_and_empty_array_and_empty_object) {
  auto no_array = merged("{\n  \"version\": \"2.0.0\" // v\n}\n", tasks({kB}));
  BOOST_TEST(no_array.text ==
             "{\n"
             "  \"version\": \"2.0.0\", // v\n"
             "  \"tasks\": [\n"
             "    {\n"
             "      \"label\": \"ferry: b\",\n"
             "      \"type\": \"shell\"\n"
             "    }\n"
             "  ]\n"
             "}\n");
  auto empty_array = merged("{\n  \"version\": \"2.0.0\",\n  \"tasks\": []\n}\n", tasks({kB}));
  BOOST_TEST(empty_array.text ==
             "{\n"
             "  \"version\": \"2.0.0\",\n"
             "  \"tasks\": [\n"
             "    {\n"
             "      \"label\": \"ferry: b\",\n"
             "      \"type\": \"shell\"\n"
             "    }\n"
             "  ]\n"
             "}\n");
  auto empty_object = merged("{}", tasks({kB}));
  BOOST_TEST(nlohmann::json::parse(empty_object.text) ==
             nlohmann::json::parse(R"({"version": "2.0.0", "tasks": [{"label": "ferry: b", "type": "shell"}]})"));
}

BOOST_AUTO_TEST_CASE(strings_that_look_like_comments_are_not_comments) {
  const std::string existing = R"({"tasks": [{"label": "a // b", "command": "x /* y */ ,]"}], "version": "2.0.0"})";
  auto m = merged(existing, tasks({kB}));
  auto doc = nlohmann::json::parse(m.text);
  BOOST_TEST(doc["tasks"][0]["label"] == "a // b");
  BOOST_TEST(doc["tasks"][0]["command"] == "x /* y */ ,]");
  BOOST_TEST(doc["tasks"].size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_key_given_twice_edits_the_one_that_counts) {
  // JSON parsers keep the last of two equal keys; the first one here is not even an array.
  auto m = merged(R"({"tasks": 1, "version": "2.0.0", "tasks": []})", tasks({kB}));
  auto doc = nlohmann::json::parse(m.text);
  BOOST_TEST(doc["tasks"].size() == 1u);
  BOOST_TEST(m.text.starts_with(R"({"tasks": 1, "version": "2.0.0", "tasks": [)"), m.text);
  auto bom = merge_named_entries("\xEF\xBB\xBF{\"version\": \"2.0.0\"}", tasks({kB}));
  if (bom) BOOST_TEST(bom->text.starts_with("\xEF\xBB\xBF{"), bom->text);  // kept, if the file is read at all
}

BOOST_AUTO_TEST_CASE(what_cannot_be_read_is_refused) {
  for (const char* bad : {"{\"tasks\": [1,,]}", "{,}", "{\"tasks\": [,]}", "{\"a\": 1,, }", "[]", "{\"tasks\": {}}", "{\"tasks\": [] /* open", "not json", "{\"a\": 1} x"}) {
    auto m = merge_named_entries(bad, tasks({kB}));
    BOOST_TEST(!m.has_value(), bad);
  }
  BOOST_TEST(!merge_named_entries("", tasks({ojson{{"type", "shell"}}})).has_value());  // no label
}

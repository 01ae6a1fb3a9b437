// parse_json_text, the depth-limited parse every JSON document goes through: the limit is exact,
// a refusal and a syntax error both say where, and nothing too deep gets far enough to recurse.
#define BOOST_TEST_MODULE json_parse
#include <boost/test/unit_test.hpp>

#include <string>

#include "protocol/codec.hpp"
#include "protocol/json_parse.hpp"

using namespace ferry::protocol;

namespace {

std::string nested(std::size_t depth, char open = '[', char close = ']') {
  return std::string(depth, open) + std::string(depth, close);
}

std::string nested_objects(std::size_t depth) {
  std::string s;
  for (std::size_t i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  return s + std::string(depth, '}');
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_limit_is_the_message_codecs) { BOOST_TEST(kMaxJsonDepth == kMaxNestingDepth); }

BOOST_AUTO_TEST_CASE(exactly_the_limit_parses_one_more_is_refused_at_its_bracket) {
  auto ok = parse_json_text(nested(kMaxJsonDepth));
  BOOST_REQUIRE(ok.has_value());
  BOOST_TEST(ok->is_array());
  BOOST_TEST(parse_json_text(nested_objects(kMaxJsonDepth)).has_value());

  for (const std::string& text : {nested(kMaxJsonDepth + 1), nested_objects(kMaxJsonDepth + 1)}) {
    auto deep = parse_json_text(text);
    BOOST_REQUIRE(!deep.has_value());
    BOOST_TEST((deep.error().kind == JsonParseErrorKind::too_deep));
    BOOST_TEST(deep.error().message == "nested deeper than 256 levels");
    BOOST_TEST(text[deep.error().offset] == text[0]);  // the first bracket past the limit
    BOOST_TEST(deep.error().line == 1u);
    BOOST_TEST(deep.error().column == deep.error().offset + 1);
    BOOST_TEST(deep.error().to_string().find("nested deeper than 256 levels at line 1, column ") == 0u);
  }
  BOOST_TEST(parse_json_text(nested(kMaxJsonDepth + 1)).error().offset == kMaxJsonDepth);
}

BOOST_AUTO_TEST_CASE(a_smaller_limit_is_exact_too) {
  BOOST_TEST(parse_json_text(nested(3), {.max_depth = 3}).has_value());
  auto deep = parse_json_text("{\"x\": [\n  {\"y\": [1]}]}", {.max_depth = 3});
  BOOST_REQUIRE(!deep.has_value());
  BOOST_TEST((deep.error().kind == JsonParseErrorKind::too_deep));
  BOOST_TEST(deep.error().line == 2u);
  BOOST_TEST(deep.error().column == 9u);  // the '[' after "y"
}

// Brackets in strings and comments are not nesting: the place is the real bracket's.
BOOST_AUTO_TEST_CASE(brackets_in_strings_and_comments_do_not_move_the_place) {
  const std::string text = "[\"[[[\\\"[[\", // [[[[\n /* {{{{ */ [[1]]]";
  auto deep = parse_json_text(text, {.ignore_comments = true, .max_depth = 2});
  BOOST_REQUIRE(!deep.has_value());
  BOOST_TEST((deep.error().kind == JsonParseErrorKind::too_deep));
  BOOST_TEST(deep.error().offset == text.find("[1"));
  BOOST_TEST(deep.error().line == 2u);
}

// 100,000 levels: refused before any recursive copy, quickly, at the 257th bracket.
BOOST_AUTO_TEST_CASE(a_hundred_thousand_levels_are_refused) {
  for (char open : {'[', '{'}) {
    const std::string text = open == '[' ? nested(100000) : nested_objects(100000);
    auto deep = parse_json_text(text);
    BOOST_REQUIRE(!deep.has_value());
    BOOST_TEST((deep.error().kind == JsonParseErrorKind::too_deep));
    BOOST_TEST(deep.error().offset < 2000u);
  }
  // Unbalanced and deep: the depth stops it before the missing brackets do.
  auto open_only = parse_json_text(std::string(100000, '['));
  BOOST_REQUIRE(!open_only.has_value());
  BOOST_TEST((open_only.error().kind == JsonParseErrorKind::too_deep));
}

BOOST_AUTO_TEST_CASE(garbage_is_refused_with_its_place) {
  auto bad = parse_json_text("{\n  \"a\": tru}");
  BOOST_REQUIRE(!bad.has_value());
  BOOST_TEST((bad.error().kind == JsonParseErrorKind::syntax));
  BOOST_TEST(bad.error().message.starts_with("syntax error while parsing value"));
  BOOST_TEST(bad.error().message.find("[json.exception") == std::string::npos);
  BOOST_TEST(bad.error().offset == 12u);  // the '}' that broke "tru"
  BOOST_TEST(bad.error().line == 2u);
  BOOST_TEST(bad.error().column == 11u);

  auto empty = parse_json_text("");
  BOOST_REQUIRE(!empty.has_value());
  BOOST_TEST(empty.error().offset == 0u);
  auto cut = parse_json_text("[1, 2");
  BOOST_REQUIRE(!cut.has_value());
  BOOST_TEST(cut.error().offset == 5u);  // the end
  auto trailing = parse_json_text("{} x");
  BOOST_REQUIRE(!trailing.has_value());
  BOOST_TEST(trailing.error().offset == 3u);
  BOOST_TEST(!parse_json_text("\xff").has_value());
}

BOOST_AUTO_TEST_CASE(a_number_no_double_holds_is_out_of_range) {
  auto big = parse_json_text("[1, 1e400]");
  BOOST_REQUIRE(!big.has_value());
  BOOST_TEST((big.error().kind == JsonParseErrorKind::out_of_range));
  BOOST_TEST(big.error().message.find("1e400") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(parses_as_nlohmann_does) {
  const std::string text = "\xEF\xBB\xBF{\"a\": [1, -2, 3.5, true, null, \"s\\u00e9\"], \"a2\": {}, \"a\": 7}";
  auto j = parse_json_text(text);
  BOOST_REQUIRE(j.has_value());
  BOOST_TEST(*j == nlohmann::json::parse(text));
  BOOST_TEST((*j)["a"] == 7);  // a repeated key keeps its last value
  // A NUL ends the input.
  auto nul = parse_json_text(std::string("{\"a\":1}\0garbage", 15));
  BOOST_REQUIRE(nul.has_value());
  BOOST_TEST((*nul)["a"] == 1);
  // Comments only when asked for.
  BOOST_TEST(!parse_json_text("// c\n{}").has_value());
  BOOST_TEST(parse_json_text("// c\n{} /* d */", {.ignore_comments = true}).has_value());
}

// The message codec shares the builder and the limit, for CBOR too.
BOOST_AUTO_TEST_CASE(the_codec_refuses_past_the_same_limit) {
  BOOST_TEST(decode_body(nested(kMaxJsonDepth), Encoding::json).has_value());
  BOOST_TEST(!decode_body(nested(kMaxJsonDepth + 1), Encoding::json).has_value());
  nlohmann::json v = nlohmann::json::array();
  for (std::size_t i = 1; i < kMaxJsonDepth; ++i) v = nlohmann::json::array({v, i, "s"});
  const std::string cbor = encode_body(v, Encoding::cbor);
  auto back = decode_body(cbor, Encoding::cbor);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST((*back == v));
  const std::string deeper = encode_body(nlohmann::json::array({v}), Encoding::cbor);
  BOOST_TEST(!decode_body(deeper, Encoding::cbor).has_value());
}

// The JSON locator and LSP positions: every pointer maps to the exact span of its value and key,
// positions count UTF-16 units across multi-byte text, and syntax errors land where nlohmann stopped.
#define BOOST_TEST_MODULE json_locator
#include <boost/test/unit_test.hpp>

#include "helper/diagnostics/json_locator.hpp"
#include "helper/diagnostics/line_index.hpp"

using namespace ferry::diagnostics;

namespace {

std::string_view slice(std::string_view text, ByteSpan s) { return text.substr(s.begin, s.end - s.begin); }

TextRange range_of(std::string_view text, ByteSpan s) { return LineIndex(text).range(s.begin, s.end); }

TextRange at(int line, int from, int to) { return {{line, from}, {line, to}}; }

JsonSyntaxError syntax_error(std::string_view text) {
  auto r = parse_located(text);
  BOOST_REQUIRE_MESSAGE(!r.has_value(), "parsed: " << text);
  return r.error();
}

}  // namespace

namespace ferry::diagnostics {
std::ostream& boost_test_print_type(std::ostream& os, const TextPosition& p) { return os << p.line << ":" << p.character; }
std::ostream& boost_test_print_type(std::ostream& os, const TextRange& r) {
  boost_test_print_type(os, r.start) << "-";
  return boost_test_print_type(os, r.end);
}
}  // namespace ferry::diagnostics

BOOST_AUTO_TEST_CASE(positions_count_utf16_units_per_line) {
  std::string text = "ab\ncd";
  LineIndex lines(text);
  BOOST_TEST(lines.position(0) == (TextPosition{0, 0}));
  BOOST_TEST(lines.position(2) == (TextPosition{0, 2}));  // the newline itself ends line 0
  BOOST_TEST(lines.position(3) == (TextPosition{1, 0}));
  BOOST_TEST(lines.position(5) == (TextPosition{1, 2}));
  BOOST_TEST(lines.position(99) == (TextPosition{1, 2}));  // clamped

  std::string wide = "\xC3\xA9\xF0\x9F\x98\x80x\xE4\xB8\xADy";  // é (2 bytes), 😀 (4 bytes, 2 units), x, 中 (3 bytes), y
  LineIndex w(wide);
  BOOST_TEST(w.position(2) == (TextPosition{0, 1}));
  BOOST_TEST(w.position(6) == (TextPosition{0, 3}));  // after the emoji: 1 + 2
  BOOST_TEST(w.position(7) == (TextPosition{0, 4}));
  BOOST_TEST(w.position(10) == (TextPosition{0, 5}));
  BOOST_TEST(w.position(1) == (TextPosition{0, 0}));  // inside é: before it
  BOOST_TEST(w.position(4) == (TextPosition{0, 1}));  // inside the emoji: before it

  std::string bad = "\xFFx\xC3";  // a stray byte, then a truncated sequence: one unit each
  BOOST_TEST(LineIndex(bad).position(1) == (TextPosition{0, 1}));
  BOOST_TEST(LineIndex(bad).position(3) == (TextPosition{0, 3}));
}

BOOST_AUTO_TEST_CASE(crlf_and_lone_cr_end_lines_as_lsp_counts_them) {
  std::string text = "a\r\nb\rc\n\nd";
  LineIndex lines(text);
  BOOST_TEST(lines.position(1) == (TextPosition{0, 1}));
  BOOST_TEST(lines.position(3) == (TextPosition{1, 0}));  // b
  BOOST_TEST(lines.position(5) == (TextPosition{2, 0}));  // c
  BOOST_TEST(lines.position(7) == (TextPosition{3, 0}));  // the empty line
  BOOST_TEST(lines.position(8) == (TextPosition{4, 0}));  // d
}

BOOST_AUTO_TEST_CASE(every_pointer_maps_to_its_value_and_key_across_non_ascii_lines) {
  std::string text =
      "{\n"
      "  \"name\": \"caf\xC3\xA9 \xF0\x9F\x98\x80\", \"host\": \"x\",\n"
      "  \"mappings\": [\n"
      "    {\"local\": \"\xC3\xA9\", \"remote\": \"/r\"}\n"
      "  ]\n"
      "}\n";
  auto located = parse_located(text);
  BOOST_REQUIRE(located.has_value());
  const auto& loc = located->locations;
  BOOST_TEST(loc.complete());

  const JsonNodeSpan* host = loc.find("/host");
  BOOST_REQUIRE(host);
  BOOST_TEST(slice(text, host->value) == "\"x\"");
  BOOST_TEST(range_of(text, host->value) == at(1, 29, 32));  // after "café 😀": é is 1 unit, 😀 is 2
  BOOST_TEST(range_of(text, *host->key) == at(1, 21, 27));

  const JsonNodeSpan* remote = loc.find("/mappings/0/remote");
  BOOST_REQUIRE(remote);
  BOOST_TEST(slice(text, remote->value) == "\"/r\"");
  BOOST_TEST(range_of(text, remote->value) == at(3, 29, 33));
  BOOST_TEST(range_of(text, *remote->key) == at(3, 19, 27));

  const JsonNodeSpan* item = loc.find("/mappings/0");
  BOOST_REQUIRE(item);
  BOOST_TEST(!item->key.has_value());  // array items have no key
  BOOST_TEST(slice(text, item->value).starts_with("{\"local\""));
  BOOST_TEST(slice(text, item->value).ends_with("\"/r\"}"));
  const JsonNodeSpan* root = loc.find("");
  BOOST_REQUIRE(root);
  BOOST_TEST(root->value.begin == 0u);
  BOOST_TEST(root->value.end == text.size() - 1);  // the closing brace, not the trailing newline
  BOOST_TEST(!loc.find("/mappings/1"));
  BOOST_TEST(!loc.find("/mappings/x"));
  BOOST_TEST(!loc.find("/nope"));
  BOOST_TEST(!loc.find("no-slash"));
}

BOOST_AUTO_TEST_CASE(escaped_keys_scalars_and_bom) {
  std::string text = "\xEF\xBB\xBF{\"a/b\": 1, \"t~\": [true, null, -1.5e3], \"\\u00e9\\\"\": {}}";
  auto located = parse_located(text);
  BOOST_REQUIRE(located.has_value());
  const auto& loc = located->locations;
  BOOST_REQUIRE(loc.find("/a~1b"));
  BOOST_TEST(slice(text, loc.find("/a~1b")->value) == "1");
  BOOST_REQUIRE(loc.find("/t~0/2"));
  BOOST_TEST(slice(text, loc.find("/t~0/2")->value) == "-1.5e3");
  BOOST_TEST(slice(text, loc.find("/t~0/1")->value) == "null");
  BOOST_REQUIRE(loc.find("/\xC3\xA9\""));  // decoded exactly as nlohmann decodes it
  BOOST_TEST(slice(text, *loc.find("/\xC3\xA9\"")->key) == "\"\\u00e9\\\"\"");
  BOOST_TEST(located->value.contains("\xC3\xA9\""));
}

BOOST_AUTO_TEST_CASE(a_repeated_key_keeps_the_last_value_as_nlohmann_does) {
  std::string text = R"({"a": {"x": 1}, "b": 2, "a": {"y": 2}})";
  auto located = parse_located(text);
  BOOST_REQUIRE(located.has_value());
  const auto& loc = located->locations;
  BOOST_TEST(located->value["a"].contains("y"));
  BOOST_TEST(!loc.find("/a/x"));  // the ignored value's members are gone too
  BOOST_REQUIRE(loc.find("/a/y"));
  BOOST_REQUIRE_EQUAL(loc.duplicates().size(), 1u);
  BOOST_TEST(loc.duplicates()[0].pointer == "/a");
  BOOST_TEST(loc.duplicates()[0].key.begin == 1u);  // the first, ignored "a"
}

BOOST_AUTO_TEST_CASE(tolerant_scan_keeps_what_came_before_a_syntax_error) {
  std::string text = R"({"model": {"kind": "mlp"}, "epochs": 3, "data": {"source": )";
  auto loc = JsonLocations::scan(text);
  BOOST_TEST(!loc.complete());
  auto keys = loc.top_level_keys();
  BOOST_TEST(keys == (std::vector<std::string>{"data", "epochs", "model"}), boost::test_tools::per_element());
  BOOST_TEST(JsonLocations::scan("").top_level_keys().empty());
  BOOST_TEST(JsonLocations::scan("[1, 2]").top_level_keys().empty());
  BOOST_TEST(!JsonLocations::scan("{} x").complete());
}

BOOST_AUTO_TEST_CASE(a_nul_byte_ends_the_input_as_for_nlohmann) {
  std::string text("{\"a\": 1}\0{garbage", 17);
  auto located = parse_located(text);
  BOOST_REQUIRE(located.has_value());
  BOOST_TEST(located->locations.complete());
  BOOST_REQUIRE(located->locations.find("/a"));
  std::string cut("{\"a\": 1\0}", 10);
  BOOST_TEST(syntax_error(cut).message.find("unexpected end of input") != std::string::npos);
}

// The parse refuses past 256 levels (what parsed would be copied and compared recursively);
// the scanner, iterative, still maps any depth.
BOOST_AUTO_TEST_CASE(deep_nesting_is_no_stack_overflow) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto e = syntax_error(deep);
  BOOST_TEST(e.message == "nested deeper than 256 levels");
  BOOST_TEST(e.span.begin == 256u);
  BOOST_TEST(e.span.end == 257u);
  BOOST_TEST(parse_located(std::string(256, '[') + std::string(256, ']')).has_value());
  auto scanned = JsonLocations::scan(deep);
  BOOST_TEST(scanned.complete());
  bool exact = false;
  BOOST_TEST(scanned.find_nearest("/0/0/0/1", exact));
  BOOST_TEST(!exact);
  auto broken = JsonLocations::scan(std::string(100000, '{') + "\"a\": ");
  BOOST_TEST(!broken.complete());
}

BOOST_AUTO_TEST_CASE(syntax_errors_land_on_the_offending_text) {
  std::string bad_literal = "{\"a\": tru}";
  auto e = syntax_error(bad_literal);
  BOOST_TEST(slice(bad_literal, e.span) == "tru");
  BOOST_TEST(e.message == "syntax error while parsing value - invalid literal");

  std::string after_emoji = "{\n  \"n\": \"\xF0\x9F\x98\x80\", x\n}";
  e = syntax_error(after_emoji);
  BOOST_TEST(range_of(after_emoji, e.span) == at(1, 13, 14));
  BOOST_TEST(slice(after_emoji, e.span) == "x");

  std::string trailing_comma = "{\"a\": 1,\n}";
  e = syntax_error(trailing_comma);
  BOOST_TEST(range_of(trailing_comma, e.span) == at(1, 0, 1));
  BOOST_TEST(e.message == "syntax error while parsing object key - unexpected '}'; expected string literal");

  e = syntax_error("{\"a\": 1} x");
  BOOST_TEST(e.message == "syntax error while parsing value - invalid literal; expected end of input");
  BOOST_TEST(e.span.begin == 9u);

  std::string unclosed = "{\n";
  e = syntax_error(unclosed);
  BOOST_TEST(range_of(unclosed, e.span) == at(1, 0, 0));  // at the end: empty
  BOOST_TEST(e.message.find("unexpected end of input") != std::string::npos);
  BOOST_TEST(range_of("", syntax_error("").span) == at(0, 0, 0));

  std::string newline_in_string = "{\"a\": \"x\ny\"}";
  e = syntax_error(newline_in_string);
  BOOST_TEST(range_of(newline_in_string, e.span) == at(0, 8, 8));
  BOOST_TEST(e.message.find("control character U+000A") != std::string::npos);

  std::string bad_utf8 = "{\"\xC3\xA9\": \"\xFF\"}";
  e = syntax_error(bad_utf8);
  BOOST_TEST(range_of(bad_utf8, e.span) == at(0, 7, 8));

  // "unexpected <token>": nlohmann stops on the token's last byte; the whole token is marked.
  std::string missing_colon = R"({"name" "gpu"})";
  BOOST_TEST(slice(missing_colon, syntax_error(missing_colon).span) == R"("gpu")");
  std::string escaped = R"(["a" "b\"c"])";
  BOOST_TEST(slice(escaped, syntax_error(escaped).span) == R"("b\"c")");
  BOOST_TEST(slice("[1 22]", syntax_error("[1 22]").span) == "22");
  BOOST_TEST(slice("[1 true]", syntax_error("[1 true]").span) == "true");
  BOOST_TEST(slice("[1 {]", syntax_error("[1 {]").span) == "{");

  std::string number = "[1.5e]";
  BOOST_TEST(slice(number, syntax_error(number).span) == "1.5e");
}

BOOST_AUTO_TEST_CASE(a_number_too_large_for_a_double_is_an_error_at_that_number) {
  // nlohmann throws out_of_range (not parse_error) for it, with no position.
  std::string text = "{\"a\": \"1e400\", \"b\": [1, 1e400]}";
  auto e = syntax_error(text);
  BOOST_TEST(e.span.begin == text.rfind("1e400"));
  BOOST_TEST(slice(text, e.span) == "1e400");
  BOOST_TEST(e.message == "number out of range: 1e400 is too large for a double");
  BOOST_TEST(parse_located("[1e300, -1e-400]").has_value());  // underflow is 0, not an error
}

BOOST_AUTO_TEST_CASE(comments_are_errors_as_in_load_project) {
  std::string text = "{\n  // the host\n  \"host\": \"local\"\n}";
  auto e = syntax_error(text);
  BOOST_TEST(range_of(text, e.span).start == (TextPosition{1, 2}));
}

BOOST_AUTO_TEST_CASE(mark_spans_values_keys_and_missing_members) {
  std::string text =
      "{\n"
      "  \"tunnels\": [{\"name\": \"t\"}],\n"
      "  \"autostop\": {\n"
      "    \"action\": \"halt\"\n"
      "  }\n"
      "}";
  auto loc = JsonLocations::scan(text);
  auto mark = [&](std::string_view p, Mark m) { return std::string(slice(text, mark_span(loc, text, p, m))); };
  BOOST_TEST(mark("/autostop/action", Mark::value) == "\"halt\"");
  BOOST_TEST(mark("/autostop/action", Mark::key) == "\"action\"");
  BOOST_TEST(mark("/autostop", Mark::value) == "\"autostop\"");   // a multi-line block: by its key
  BOOST_TEST(mark("/tunnels", Mark::value) == "[{\"name\": \"t\"}]");  // one line: the whole value
  BOOST_TEST(mark("/tunnels/0/remotePort", Mark::members) == "{");  // missing in an array item: its brace
  BOOST_TEST(mark("/autostop/enabled", Mark::value) == "\"autostop\"");  // missing: the parent's key
  BOOST_TEST(mark("", Mark::members) == "{");
  BOOST_TEST(mark("", Mark::value) == "{");  // the whole file: only its opening brace
  BOOST_TEST(mark("/tunnels/0", Mark::key) == "{\"name\": \"t\"}");  // no key: the value
}

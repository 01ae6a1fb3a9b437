// The helper's reading of ferry-train's stdout: lines split across output records, event
// parsing (and refusal of what is not an event), the train/metrics params.
#define BOOST_TEST_MODULE train_event
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "helper/train/train_event.hpp"

using namespace ferry::training;

BOOST_AUTO_TEST_CASE(parses_an_event_line) {
  auto e = parse_train_event(R"({"event":"step","time":1.5,"step":20,"loss":0.25})");
  BOOST_TEST_REQUIRE(e.has_value());
  BOOST_TEST(e->kind == "step");
  BOOST_TEST(e->body["step"].get<int>() == 20);
  BOOST_TEST(e->body["event"] == "step");
  // A CRLF line is still an event.
  BOOST_TEST(parse_train_event("{\"event\":\"done\"}\r").has_value());
}

BOOST_AUTO_TEST_CASE(refuses_what_is_not_an_event) {
  for (const char* line : {"", "hello", "[1,2]", "{\"time\":1}", "{\"event\":3}", "{\"event\":\"\"}", "{\"event\":\"step\"",
                           "null", "\"event\""}) {
    BOOST_TEST(!parse_train_event(line).has_value(), line);
  }
}

BOOST_AUTO_TEST_CASE(splits_lines_across_pieces) {
  LineSplitter s;
  std::vector<std::string> lines;
  auto sink = [&](std::string_view l) { lines.emplace_back(l); };
  s.feed("{\"event\":\"a\"}\n{\"ev", sink);
  BOOST_TEST(lines.size() == 1u);
  s.feed("ent\":\"b\"}", sink);
  BOOST_TEST(lines.size() == 1u);
  s.feed("\n\n{\"event\":\"c\"}\nTAIL", sink);
  BOOST_TEST_REQUIRE(lines.size() == 4u);
  BOOST_TEST(lines[0] == "{\"event\":\"a\"}");
  BOOST_TEST(lines[1] == "{\"event\":\"b\"}");
  BOOST_TEST(lines[2] == "");
  BOOST_TEST(lines[3] == "{\"event\":\"c\"}");
  s.finish(sink);
  BOOST_TEST_REQUIRE(lines.size() == 5u);
  BOOST_TEST(lines[4] == "TAIL");
  s.finish(sink);
  BOOST_TEST(lines.size() == 5u);  // the tail is handed out once
}

BOOST_AUTO_TEST_CASE(byte_at_a_time_gives_the_same_lines) {
  const std::string stream = "{\"event\":\"start\",\"step\":0}\n{\"event\":\"step\",\"step\":1}\n{\"event\":\"done\"}\n";
  LineSplitter s;
  std::vector<std::string> kinds;
  for (char c : stream) {
    s.feed(std::string_view(&c, 1), [&](std::string_view l) {
      auto e = parse_train_event(l);
      BOOST_TEST_REQUIRE(e.has_value());
      kinds.push_back(e->kind);
    });
  }
  BOOST_TEST(kinds == (std::vector<std::string>{"start", "step", "done"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_endless_line_is_handed_out_in_pieces) {
  LineSplitter s;
  std::size_t pieces = 0, bytes = 0;
  const std::string chunk(1 << 20, 'x');
  for (int i = 0; i < 9; ++i) s.feed(chunk, [&](std::string_view l) { ++pieces; bytes += l.size(); });
  BOOST_TEST(pieces == 2u);  // 4 MiB each, 1 MiB still pending
  BOOST_TEST(bytes == 8u << 20);
}

BOOST_AUTO_TEST_CASE(metrics_params_carry_the_run_and_the_whole_event) {
  auto e = parse_train_event(R"({"event":"eval","time":2,"step":100,"loss":0.3,"accuracy":0.9})");
  BOOST_TEST_REQUIRE(e.has_value());
  auto p = metrics_params("20261130-020000-abcd", *e);
  BOOST_TEST(p["runId"] == "20261130-020000-abcd");
  BOOST_TEST(p["event"]["event"] == "eval");
  BOOST_TEST(p["event"]["accuracy"].get<double>() == 0.9);
  BOOST_TEST(p.size() == 2u);
}

// Output records and the offset cursor: every record once, in order; duplicates dropped, gaps seen.
#define BOOST_TEST_MODULE output_cursor
#include <boost/test/unit_test.hpp>

#include "helper/run/output_cursor.hpp"

using namespace ferry::run;

namespace {
json note(std::uint64_t offset, int stream, std::string_view bytes) {
  return json{{"id", "r"}, {"offset", offset}, {"stream", stream},
              {"data", json::binary(std::vector<std::uint8_t>(bytes.begin(), bytes.end()))}};
}
}  // namespace

BOOST_AUTO_TEST_CASE(parses_binary_data_and_rejects_bad_records) {
  std::string bytes("a\0\xff", 3);
  auto r = parse_output_record(note(10, 2, bytes));
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->data == bytes);
  BOOST_TEST((r->stream == Stream::stderr_stream));
  BOOST_TEST(r->next() == 10u + kRecordHeaderBytes + 3u);
  BOOST_TEST(!parse_output_record(note(0, 3, "x")).has_value());
  BOOST_TEST(!parse_output_record({{"id", "r"}, {"offset", -1}, {"stream", 1}, {"data", "x"}}).has_value());
  BOOST_TEST(!parse_output_record({{"id", "r"}, {"offset", 0}, {"stream", 1}}).has_value());
  BOOST_TEST(!parse_output_record({{"offset", 0}, {"stream", 1}, {"data", "x"}}).has_value());
  BOOST_TEST(parse_output_record({{"offset", 0}, {"stream", 1}, {"data", "x"}}, "given").value().id == "given");
}

BOOST_AUTO_TEST_CASE(read_result_carries_records_and_next) {
  json j{{"records", json::array({note(0, 1, "ab"), note(7, 2, "c")})}, {"next", 13}, {"state", "exited"}};
  auto r = parse_read_result(j, "r");
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->records.size() == 2u);
  BOOST_TEST(r->next == 13u);
  BOOST_TEST(r->state == "exited");
  BOOST_TEST(!parse_read_result(json{{"records", 1}, {"next", 0}}, "r").has_value());
}

BOOST_AUTO_TEST_CASE(cursor_delivers_once_in_order) {
  OutputCursor c(0);
  auto a = *parse_output_record(note(0, 1, "hello"));
  auto b = *parse_output_record(note(10, 2, "err"));
  auto d = *parse_output_record(note(18, 1, "x"));
  BOOST_TEST((c.accept(a) == OutputCursor::Verdict::deliver));
  BOOST_TEST((c.accept(a) == OutputCursor::Verdict::duplicate));
  BOOST_TEST((c.accept(d) == OutputCursor::Verdict::gap));  // b is missing
  BOOST_TEST(c.next() == 10u);
  BOOST_TEST((c.accept(b) == OutputCursor::Verdict::deliver));
  BOOST_TEST((c.accept(d) == OutputCursor::Verdict::deliver));
  BOOST_TEST(c.next() == 24u);
  BOOST_TEST(c.delivered_bytes() == 9u);
}

BOOST_AUTO_TEST_CASE(cursor_resumes_from_an_offset) {
  OutputCursor c(10);
  BOOST_TEST((c.accept(*parse_output_record(note(0, 1, "hello"))) == OutputCursor::Verdict::duplicate));
  BOOST_TEST((c.accept(*parse_output_record(note(10, 1, "world"))) == OutputCursor::Verdict::deliver));
  BOOST_TEST(c.next() == 20u);
}

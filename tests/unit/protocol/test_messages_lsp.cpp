// The typed textDocument/codeLens and workspace/executeCommand messages
// (protocol/messages_lsp.hpp): LSP's shapes, round-tripped, with the -32602 pointers ferry sends.
#define BOOST_TEST_MODULE messages_lsp
#include <boost/test/unit_test.hpp>

#include "protocol/messages_lsp.hpp"

using namespace ferry::protocol;

BOOST_AUTO_TEST_CASE(code_lens_params_round_trip_and_name_the_uri) {
  CodeLensParams p{{"file:///p/train.py"}};
  CodeLensParams back;
  BOOST_REQUIRE(!from_json(to_json(p), back).has_value());
  BOOST_TEST(back.text_document.uri == "file:///p/train.py");
  BOOST_TEST(from_json(json::object(), back)->pointer == "/textDocument/uri");
  BOOST_TEST(from_json(json::parse(R"({"textDocument":{"uri":1}})"), back)->pointer == "/textDocument/uri");
  BOOST_TEST(from_json(json::array(), back)->pointer == "");
}

BOOST_AUTO_TEST_CASE(code_lens_result_is_lsps_array_and_round_trips) {
  CodeLens lens{{{3, 0}, {3, 0}}, Command{"▶ Run on box", "ferry.run", json::array({"file:///p/a.py"})}};
  json j = to_json(CodeLensResult{{lens}});
  BOOST_TEST(j == json::parse(R"([{"range":{"start":{"line":3,"character":0},"end":{"line":3,"character":0}},
                                  "command":{"title":"▶ Run on box","command":"ferry.run","arguments":["file:///p/a.py"]}}])"));
  CodeLens back;
  BOOST_REQUIRE(!from_json(j[0], back).has_value());
  BOOST_TEST(back.range.start.line == 3);
  BOOST_TEST(back.command->command == "ferry.run");
  BOOST_TEST(to_json(back) == j[0]);
  BOOST_TEST(to_json(CodeLensResult{}) == json::array());
  BOOST_TEST(from_json(json::parse(R"({"range":{"start":{"line":0,"character":0}}})"), back)->pointer == "/range/end");
}

BOOST_AUTO_TEST_CASE(execute_command_params_default_arguments_and_name_bad_ones) {
  ExecuteCommandParams p;
  BOOST_REQUIRE(!from_json(json::parse(R"({"command":"ferry.sync"})"), p).has_value());
  BOOST_TEST(p.command == "ferry.sync");
  BOOST_TEST(p.arguments == json::array());
  ExecuteCommandParams back;
  p.arguments = json::array({"file:///p/a.py"});
  BOOST_REQUIRE(!from_json(to_json(p), back).has_value());
  BOOST_TEST(back.arguments == p.arguments);
  BOOST_TEST(from_json(json::object(), back)->pointer == "/command");
  BOOST_TEST(from_json(json::parse(R"({"command":"ferry.run","arguments":{}})"), back)->pointer == "/arguments");
  BOOST_TEST(from_json(json::parse(R"({"command":"ferry.run","arguments":null})"), back)->pointer == "/arguments");
}

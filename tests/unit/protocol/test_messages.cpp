// Typed messages and the pointer-aware reader: field errors name their JSON pointer; codec depth
// bound; cancellation tokens wake waiters.
#define BOOST_TEST_MODULE messages
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

#include "protocol/binding_table.hpp"
#include "protocol/cancellation.hpp"
#include "protocol/codec.hpp"
#include "protocol/messages.hpp"

using namespace ferry::protocol;

BOOST_AUTO_TEST_CASE(initialize_params_errors_point_at_nested_fields) {
  InitializeParams p;
  auto e = from_json(json::parse(R"({"clientInfo":{"name":1}})"), p);
  BOOST_REQUIRE(e.has_value());
  BOOST_TEST(e->pointer == "/clientInfo/name");
  BOOST_TEST(e->to_string() == "/clientInfo/name: expected a string");
  BOOST_TEST(!from_json(json::parse(R"({"processId":null,"capabilities":{},"trace":"off"})"), p).has_value());
  BOOST_TEST(from_json(json::parse(R"({"trace":"loud"})"), p)->pointer == "/trace");
  BOOST_TEST(!from_json(json(nullptr), p).has_value());  // absent params
}

BOOST_AUTO_TEST_CASE(pointer_tokens_are_escaped) {
  BOOST_TEST(pointer_append("/a", "b/c~d") == "/a/b~1c~0d");
}

BOOST_AUTO_TEST_CASE(integers_accept_whole_floats_only) {
  TestSleepParams p;
  BOOST_TEST(!from_json(json::parse(R"({"ms":5.0})"), p).has_value());
  BOOST_TEST(p.ms == 5);
  BOOST_TEST(from_json(json::parse(R"({"ms":5.5})"), p)->message == "expected an integer");
  BOOST_TEST(from_json(json::parse(R"({"ms":1,"steps":0})"), p)->pointer == "/steps");
  BOOST_TEST(from_json(json::parse(R"({"ms":18446744073709551615})"), p)->message == "integer out of range");
}

BOOST_AUTO_TEST_CASE(cancel_params_and_work_done_token_types) {
  CancelParams c;
  BOOST_TEST(!from_json(json::parse(R"({"id":"x"})"), c).has_value());
  BOOST_TEST(from_json(json::parse(R"({"id":1.5})"), c)->pointer == "/id");
  json token;
  BOOST_TEST(!read_work_done_token(json::parse(R"({"workDoneToken":3})"), token).has_value());
  BOOST_TEST(token == 3);
  BOOST_TEST(read_work_done_token(json::parse(R"({"workDoneToken":true})"), token).has_value());
}

BOOST_AUTO_TEST_CASE(initialize_result_lists_methods) {
  InitializeResult r;
  r.server_info.version = "1.2.3";
  r.methods = {"a/b", "c"};
  json j = to_json(r);
  BOOST_TEST(j["serverInfo"]["name"] == "ferry");
  BOOST_TEST(j["capabilities"]["experimental"]["methods"].size() == 2u);
}

BOOST_AUTO_TEST_CASE(binding_table_lists_sorted_names) {
  BindingTable t;
  t.request<EmptyParams, EmptyResult>("z/last", [](const EmptyParams&, CallContext&) {
    return std::expected<EmptyResult, ResponseError>(EmptyResult{});
  });
  t.notification<EmptyParams>("a/first", [](const EmptyParams&, CallContext&) {});
  t.reserve_name("exit");
  auto names = t.method_names();
  BOOST_TEST((names == std::vector<std::string>{"a/first", "exit", "z/last"}));
  BOOST_TEST(t.find("a/first")->is_notification);
  BOOST_TEST(t.find("exit") == nullptr);
}

BOOST_AUTO_TEST_CASE(decode_bounds_nesting_for_json_and_cbor) {
  std::string deep(10000, '[');
  auto r = decode_body(deep, Encoding::json);
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().find("deeper") != std::string::npos);
  std::string cbor(10000, '\x81');  // array(1) of array(1) of ...
  auto c = decode_body(cbor, Encoding::cbor);
  BOOST_REQUIRE(!c.has_value());
  BOOST_TEST(decode_body("[[1]]", Encoding::json).has_value());
  BOOST_TEST(!decode_body("[1] trailing", Encoding::json).has_value());
}

BOOST_AUTO_TEST_CASE(encoding_replaces_invalid_utf8) {
  json j = std::string("a\xff");
  std::string s = encode_body(j, Encoding::json);
  BOOST_TEST(s.size() > 2u);
  json back = json::parse(s);
  BOOST_TEST(back.get<std::string>().starts_with("a"));
}

BOOST_AUTO_TEST_CASE(cancellation_wakes_a_waiter) {
  CancellationSource src;
  auto token = src.token();
  BOOST_TEST(!token.wait_for(std::chrono::milliseconds(1)));
  auto start = std::chrono::steady_clock::now();
  std::thread canceller([&] { src.cancel(); });
  BOOST_TEST(token.wait_for(std::chrono::seconds(30)));
  canceller.join();
  BOOST_TEST((std::chrono::steady_clock::now() - start < std::chrono::seconds(10)));
  BOOST_TEST(token.cancelled());
}

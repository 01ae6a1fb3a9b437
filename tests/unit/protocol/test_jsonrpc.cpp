// JSON-RPC message parsing: requests, notifications, responses and the invalid shapes.
#define BOOST_TEST_MODULE jsonrpc
#include <boost/test/unit_test.hpp>

#include "protocol/jsonrpc.hpp"

using namespace ferry::protocol;

BOOST_AUTO_TEST_CASE(parses_request_notification_response) {
  auto r = parse_message(json::parse(R"({"jsonrpc":"2.0","id":7,"method":"a/b","params":{"x":1}})"));
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(std::get<Request>(*r).method == "a/b");
  auto n = parse_message(json::parse(R"({"jsonrpc":"2.0","method":"exit"})"));
  BOOST_REQUIRE(n.has_value());
  BOOST_TEST(std::holds_alternative<Notification>(*n));
  auto s = parse_message(json::parse(R"({"jsonrpc":"2.0","id":"q","error":{"code":-1,"message":"m"}})"));
  BOOST_REQUIRE(s.has_value());
  BOOST_TEST(!std::get<Response>(*s).ok());
}

BOOST_AUTO_TEST_CASE(rejects_invalid_shapes_keeping_the_id) {
  auto bad_ver = parse_message(json::parse(R"({"jsonrpc":"1.0","id":3,"method":"m"})"));
  BOOST_REQUIRE(!bad_ver.has_value());
  BOOST_TEST(bad_ver.error().id == json(3));
  BOOST_TEST(bad_ver.error().error.code == error_code::kInvalidRequest);
  BOOST_TEST(!parse_message(json::parse(R"({"jsonrpc":"2.0","id":1,"method":"m","params":3})")).has_value());
  BOOST_TEST(!parse_message(json::parse(R"({"jsonrpc":"2.0","id":[1],"method":"m"})")).has_value());
  BOOST_TEST(!parse_message(json::parse("5")).has_value());
  BOOST_TEST(!parse_message(json::parse(R"({"jsonrpc":"2.0","id":1,"result":1,"error":{}})")).has_value());
}

// eglot 1.9 sends `"params": null` with shutdown and exit: taken as no params, not refused.
BOOST_AUTO_TEST_CASE(null_params_are_no_params) {
  auto shutdown = parse_message(json::parse(R"({"jsonrpc":"2.0","id":4,"method":"shutdown","params":null})"));
  BOOST_REQUIRE(shutdown.has_value());
  BOOST_REQUIRE(std::holds_alternative<Request>(*shutdown));
  BOOST_TEST(std::get<Request>(*shutdown).params.is_null());
  auto exit = parse_message(json::parse(R"({"jsonrpc":"2.0","method":"exit","params":null})"));
  BOOST_REQUIRE(exit.has_value());
  BOOST_TEST(std::holds_alternative<Notification>(*exit));
}

BOOST_AUTO_TEST_CASE(round_trips_through_json) {
  Request q{json(1), "m", json{{"a", 1}}};
  auto back = parse_message(to_json(q));
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(to_json(*back) == to_json(q));
}

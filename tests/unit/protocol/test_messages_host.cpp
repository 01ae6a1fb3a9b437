// The typed host/disconnect and ferry/testConfirmHostKey results (protocol/messages_host.hpp).
#define BOOST_TEST_MODULE messages_host
#include <boost/test/unit_test.hpp>

#include "protocol/messages.hpp"

using namespace ferry::protocol;

BOOST_AUTO_TEST_CASE(disconnect_result_round_trips) {
  json j = to_json(HostDisconnectResult{"gpu-box", true});
  BOOST_TEST(j == json::parse(R"({"host":"gpu-box","disconnected":true})"));
  HostDisconnectResult back;
  BOOST_REQUIRE(!from_json(j, back).has_value());
  BOOST_TEST(back.host == "gpu-box");
  BOOST_TEST(back.disconnected);
}

BOOST_AUTO_TEST_CASE(disconnect_result_decode_names_the_missing_key) {
  HostDisconnectResult back;
  BOOST_TEST(from_json(json::parse(R"({"host":"gpu-box"})"), back)->pointer == "/disconnected");
  BOOST_TEST(from_json(json::parse(R"({"host":1,"disconnected":true})"), back)->pointer == "/host");
}

BOOST_AUTO_TEST_CASE(confirm_host_key_result_round_trips) {
  ConfirmHostKeyResult back;
  BOOST_REQUIRE(!from_json(to_json(ConfirmHostKeyResult{true}), back).has_value());
  BOOST_TEST(back.accept);
  BOOST_TEST(to_json(ConfirmHostKeyResult{false}) == json::parse(R"({"accept":false})"));
}

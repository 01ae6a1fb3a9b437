// host/stateChanged's params (remote::HostState, ssh_endpoint.hpp): the state is an enum in code
// and its word only on the wire, both ways; what the link leaves out stays out.
#define BOOST_TEST_MODULE host_state
#include <boost/test/unit_test.hpp>

#include "helper/remote/ssh_endpoint.hpp"

using namespace ferry::remote;
using ferry::protocol::LinkState;

BOOST_AUTO_TEST_CASE(a_reconnecting_state_round_trips_through_its_wire_word) {
  HostState s{LinkState::reconnecting, "gpu-box", 3, 2000, "connection reset"};
  json j = to_json(s);
  BOOST_TEST(j == json::parse(R"({"state":"reconnecting","host":"gpu-box","attempt":3,"retryInMs":2000,"message":"connection reset"})"));
  HostState back = host_state_from_json(j);
  BOOST_TEST((back.state == LinkState::reconnecting));
  BOOST_TEST(back.host == "gpu-box");
  BOOST_TEST(back.attempt == 3);
  BOOST_TEST(back.retry_in_ms == 2000);
  BOOST_TEST(back.message == "connection reset");
}

BOOST_AUTO_TEST_CASE(a_connected_state_leaves_out_the_retry_keys) {
  json j = to_json(HostState{LinkState::connected, "gpu-box", 0, 0, ""});
  BOOST_TEST(j == json::parse(R"({"state":"connected","host":"gpu-box"})"));
}

BOOST_AUTO_TEST_CASE(an_unknown_word_or_a_wrong_type_reads_as_unknown_and_empty) {
  HostState s = host_state_from_json(json::parse(R"({"state":"Connected","host":7,"attempt":"x"})"));
  BOOST_TEST((s.state == LinkState::unknown));
  BOOST_TEST(s.host.empty());
  BOOST_TEST(s.attempt == 0);
  BOOST_TEST((host_state_from_json(json()).state == LinkState::unknown));
}

// binary_as_text / text_as_binary (protocol/json_binary.hpp): bytes across a JSON text wire.
#define BOOST_TEST_MODULE json_binary
#include <boost/test/unit_test.hpp>

#include "protocol/json_binary.hpp"

using nlohmann::json;
using ferry::protocol::binary_as_text;
using ferry::protocol::text_as_binary;

BOOST_AUTO_TEST_CASE(bytes_survive_a_text_wire_anywhere_in_a_value) {
  const json original{{"records", {{{"stream", "stdout"}, {"data", json::binary({0x00, 0xff, 0x9d, 'h', 'i'})}}}},
                      {"next", 5},
                      {"empty", json::binary({})}};
  const json text = binary_as_text(original);
  BOOST_TEST(text["records"][0]["data"] == json({{"$base64", "AP+daGk="}}));
  BOOST_TEST(text["empty"] == json({{"$base64", ""}}));
  const std::string wire = text.dump();  // valid UTF-8: dump() would throw on raw bytes
  BOOST_TEST(text_as_binary(json::parse(wire)) == original);
}

BOOST_AUTO_TEST_CASE(values_without_bytes_pass_unchanged) {
  const json plain{{"id", "r1"}, {"argv", {"python3", "x.py"}}, {"n", 1.5}, {"ok", true}, {"none", nullptr}};
  BOOST_TEST(binary_as_text(plain) == plain);
  BOOST_TEST(text_as_binary(plain) == plain);
  // An object that merely has the key among others, or text that is not base64, stays as it is.
  const json look_alike{{"$base64", "AAAA"}, {"other", 1}};
  BOOST_TEST(text_as_binary(look_alike) == look_alike);
  const json not_base64{{"$base64", "not base64!"}};
  BOOST_TEST(text_as_binary(not_base64) == not_base64);
}

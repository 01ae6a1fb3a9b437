// The typed env/* results (protocol/messages_env.hpp): env/sync's report with the venv keys on
// top, round-tripped, and env/info's document passed through.
#define BOOST_TEST_MODULE messages_env
#include <boost/test/unit_test.hpp>

#include "protocol/messages_env.hpp"

using namespace ferry::protocol;

BOOST_AUTO_TEST_CASE(sync_result_says_venv_python_null_when_there_is_none) {
  EnvSyncResult r;
  r.report = json::parse(R"({"mirror":"/c/m","filesReceived":3})");
  json j = to_json(r);
  BOOST_TEST(j == json::parse(R"({"mirror":"/c/m","filesReceived":3,"venvPython":null})"));
  BOOST_TEST(!j.contains("venvError"));
}

BOOST_AUTO_TEST_CASE(sync_result_round_trips) {
  EnvSyncResult r;
  r.report = json::parse(R"({"mirror":"/c/m","entries":[],"filesReceived":0,"cancelled":false})");
  r.venv_python = "/p/.venv/bin/python";
  r.venv_error = "cannot write";
  EnvSyncResult back;
  BOOST_REQUIRE(!from_json(to_json(r), back).has_value());
  BOOST_TEST(back.report == r.report);
  BOOST_TEST(*back.venv_python == "/p/.venv/bin/python");
  BOOST_TEST(*back.venv_error == "cannot write");
  BOOST_TEST(to_json(back) == to_json(r));
}

BOOST_AUTO_TEST_CASE(sync_result_decode_names_a_bad_venv_key) {
  EnvSyncResult back;
  BOOST_TEST(from_json(json::parse(R"({"venvPython":3})"), back)->pointer == "/venvPython");
  BOOST_TEST(from_json(json::array(), back)->pointer == "");
}

BOOST_AUTO_TEST_CASE(info_result_is_the_document_itself) {
  const json info = json::parse(R"({"python":"3.11.4","sysPath":[],"torch":null})");
  BOOST_TEST(to_json(EnvInfoResult{info}) == info);
}

// server::error_codes: every ErrorKind has its documented JSON-RPC code (protocol.md's table) and
// the codes map back to their kinds, so an error crossing a layer keeps what it means.
#define BOOST_TEST_MODULE error_codes
#include <boost/test/unit_test.hpp>

#include "helper/server/error_codes.hpp"

using namespace ferry;
using namespace ferry::server;

BOOST_AUTO_TEST_CASE(each_kind_has_its_documented_code) {
  BOOST_TEST(error_code_of(ErrorKind::invalid_input) == -32602);
  BOOST_TEST(error_code_of(ErrorKind::project_not_found) == -32099);
  BOOST_TEST(error_code_of(ErrorKind::invalid_project) == -32098);
  BOOST_TEST(error_code_of(ErrorKind::agent_lost) == -32097);
  BOOST_TEST(error_code_of(ErrorKind::version_mismatch) == -32096);
  BOOST_TEST(error_code_of(ErrorKind::too_large) == -32095);
  BOOST_TEST(error_code_of(ErrorKind::io) == -32094);
  BOOST_TEST(error_code_of(ErrorKind::debugpy_missing) == -32090);
  BOOST_TEST(error_code_of(ErrorKind::untrusted) == -32093);
  BOOST_TEST(error_code_of(ErrorKind::cancelled) == -32800);
  BOOST_TEST(error_code_of(ErrorKind::internal) == -32603);
}

BOOST_AUTO_TEST_CASE(codes_map_back_to_their_kinds_and_unknown_codes_are_internal) {
  for (auto k : {ErrorKind::invalid_input, ErrorKind::project_not_found, ErrorKind::invalid_project, ErrorKind::agent_lost,
                 ErrorKind::version_mismatch, ErrorKind::too_large, ErrorKind::io, ErrorKind::debugpy_missing,
                 ErrorKind::cancelled, ErrorKind::internal})
    BOOST_TEST((error_kind_of(error_code_of(k)) == k), to_string(k));
  BOOST_TEST((error_kind_of(-1) == ErrorKind::internal));
}

BOOST_AUTO_TEST_CASE(a_response_error_names_the_method_and_keeps_the_data) {
  auto r = response_error({ErrorKind::agent_lost, "the agent went away", nlohmann::json{{"host", "gpu"}}}, "sync/push");
  BOOST_TEST(r.code == -32097);
  BOOST_TEST(r.message == "sync/push: the agent went away");
  BOOST_REQUIRE(r.data.has_value());
  BOOST_TEST((*r.data)["host"] == "gpu");
  BOOST_TEST(response_error({ErrorKind::io, "disk full"}).message == "disk full");
  Error back = error_of(r);
  BOOST_TEST((back.kind == ErrorKind::agent_lost));
}

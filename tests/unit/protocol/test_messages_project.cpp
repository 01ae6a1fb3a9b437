// project/load's typed messages (ProjectLoadParams in messages.hpp, ProjectLoadResult in
// messages_project.hpp): the path round-trips, a bad one is named, the config passes through.
#define BOOST_TEST_MODULE messages_project
#include <boost/test/unit_test.hpp>

#include "protocol/messages.hpp"

using namespace ferry::protocol;

BOOST_AUTO_TEST_CASE(load_params_round_trip_and_name_a_bad_path) {
  ProjectLoadParams p{"/home/me/proj"};
  ProjectLoadParams back;
  BOOST_REQUIRE(!from_json(to_json(p), back).has_value());
  BOOST_TEST(*back.path == "/home/me/proj");
  BOOST_TEST(from_json(json::parse(R"({"path":7})"), back)->pointer == "/path");
}

BOOST_AUTO_TEST_CASE(load_result_is_the_config_document) {
  const json config = json::parse(R"({"name":"demo","host":"local","mappings":[{"local":".","remote":"demo"}]})");
  BOOST_TEST(to_json(ProjectLoadResult{config}) == config);
}

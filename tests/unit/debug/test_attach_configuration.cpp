// attach_configuration: ~ resolution from the first mapping, one pathMapping per mapping, and
// the VS Code attach entry's shape.
#define BOOST_TEST_MODULE attach_configuration
#include <boost/test/unit_test.hpp>

#include "helper/debug/attach_configuration.hpp"

using namespace ferry::debug;
using ferry::deploy::ProjectConfig;

namespace {
ProjectConfig project(std::vector<ferry::deploy::Mapping> mappings) {
  ProjectConfig c;
  c.root = "/home/me/proj";
  c.name = "proj";
  c.mappings = std::move(mappings);
  return c;
}
}  // namespace

BOOST_AUTO_TEST_CASE(home_comes_from_the_first_mapping) {
  BOOST_TEST(remote_home_from("~/work/proj", "/home/u/work/proj").value() == "/home/u");
  BOOST_TEST(remote_home_from("~/work/proj/", "/home/u/work/proj").value() == "/home/u");
  BOOST_TEST(remote_home_from("~", "/root").value() == "/root");
  BOOST_TEST(!remote_home_from("/srv/proj", "/srv/proj"));
  BOOST_TEST(!remote_home_from("~/work/proj", "/elsewhere/x"));
}

BOOST_AUTO_TEST_CASE(every_mapping_becomes_an_absolute_pair_deepest_first) {
  auto c = project({{".", "~/work/proj"}, {"data/sub", "/srv/data"}, {"lib", "~/libs/lib"}});
  auto pairs = resolve_path_mappings(c, "/home/u/work/proj");
  BOOST_REQUIRE_MESSAGE(pairs.has_value(), (pairs ? std::string() : pairs.error()));
  BOOST_REQUIRE_EQUAL(pairs->size(), 3u);
  BOOST_TEST((*pairs)[0].local_root == "/home/me/proj/data/sub");
  BOOST_TEST((*pairs)[0].remote_root == "/srv/data");
  BOOST_TEST((*pairs)[1].local_root == "/home/me/proj/lib");
  BOOST_TEST((*pairs)[1].remote_root == "/home/u/libs/lib");
  BOOST_TEST((*pairs)[2].local_root == "/home/me/proj");
  BOOST_TEST((*pairs)[2].remote_root == "/home/u/work/proj");
}

BOOST_AUTO_TEST_CASE(workspace_relative_local_roots) {
  auto c = project({{".", "/srv/p"}, {"src", "/srv/src"}});
  auto pairs = resolve_path_mappings(c, "/srv/p", true);
  BOOST_REQUIRE(pairs);
  BOOST_TEST((*pairs)[0].local_root == "${workspaceFolder}/src");
  BOOST_TEST((*pairs)[1].local_root == "${workspaceFolder}");
}

BOOST_AUTO_TEST_CASE(unresolvable_home_is_an_error_naming_the_mapping) {
  auto c = project({{".", "/srv/p"}, {"lib", "~/lib"}});
  auto pairs = resolve_path_mappings(c, "/srv/p");
  BOOST_REQUIRE(!pairs);
  BOOST_TEST(pairs.error().find("/mappings/1/remote") != std::string::npos, pairs.error());
  BOOST_TEST(!resolve_path_mappings(c, "relative/root"));
}

BOOST_AUTO_TEST_CASE(vscode_attach_shape) {
  auto c = project({{".", "~/work/proj"}});
  auto pairs = resolve_path_mappings(c, "/home/u/work/proj");
  BOOST_REQUIRE(pairs);
  AttachOptions o;
  o.port = 45678;
  auto config = vscode_attach_configuration(c, *pairs, o);
  BOOST_TEST(config["type"] == "debugpy");
  BOOST_TEST(config["request"] == "attach");
  BOOST_TEST(config["name"] == "ferry: attach (proj)");
  BOOST_TEST(config["connect"]["host"] == "127.0.0.1");
  BOOST_TEST(config["connect"]["port"] == 45678);
  BOOST_TEST(config["justMyCode"] == true);
  BOOST_REQUIRE_EQUAL(config["pathMappings"].size(), 1u);
  BOOST_TEST(config["pathMappings"][0]["localRoot"] == "/home/me/proj");
  BOOST_TEST(config["pathMappings"][0]["remoteRoot"] == "/home/u/work/proj");

  o.legacy_type = true;
  o.just_my_code = false;
  o.name = "mine";
  auto legacy = vscode_attach_configuration(c, *pairs, o);
  BOOST_TEST(legacy["type"] == "python");
  BOOST_TEST(legacy["justMyCode"] == false);
  BOOST_TEST(legacy["name"] == "mine");
}

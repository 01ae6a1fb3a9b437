// Launch entries resolved for ferry run/debug/train --launch: lookup with the names listed, the
// kinds each command takes, the command line (script path from the cwd, -m module, args, extra
// args), the cwd override and the env layering.
#define BOOST_TEST_MODULE launch_target
#include <boost/test/unit_test.hpp>

#include "helper/deploy/launch_target.hpp"

using namespace ferry::deploy;
using nlohmann::json;
using Words = std::vector<std::string>;

namespace {

ProjectConfig project(const char* text) {
  auto c = parse_project(json::parse(text), "/home/me/proj");
  BOOST_REQUIRE_MESSAGE(c.has_value(), (c ? std::string() : c.error().to_string()));
  return *c;
}

const char* kProject = R"({"env": {"A": "top", "B": "top"}, "launch": [
    {"name": "train", "script": "train.py", "args": ["--epochs", "3"], "env": {"B": "entry", "C": "entry"}},
    {"name": "eval", "kind": "debug", "module": "pkg.eval", "cwd": "runs/"},
    {"name": "nested", "script": "tools/run.py", "cwd": "runs"},
    {"name": "shell", "script": "go.sh"},
    {"name": "fit", "kind": "train", "config": "train/quick.json"}]})";

}  // namespace

BOOST_AUTO_TEST_CASE(find_launch_lists_the_names_there_are) {
  auto c = project(kProject);
  auto found = find_launch(c, "eval");
  BOOST_REQUIRE(found.has_value());
  BOOST_TEST((*found)->kind == "debug");
  auto missing = find_launch(c, "trian");
  BOOST_REQUIRE(!missing.has_value());
  BOOST_TEST(missing.error() == "no launch entry \"trian\" in ferry.json; there are: \"train\" (run) \"eval\" (debug) "
                                "\"nested\" (run) \"shell\" (run) \"fit\" (train)");
  auto none = find_launch(project("{}"), "train");
  BOOST_REQUIRE(!none.has_value());
  BOOST_TEST(none.error().find("\"launch\" list is empty") != std::string::npos, none.error());
}

BOOST_AUTO_TEST_CASE(each_command_takes_its_kinds) {
  auto c = project(kProject);
  const auto& run = c.launch[0];
  const auto& debug = c.launch[1];
  const auto& train = c.launch[4];
  BOOST_TEST(check_launch_kind(run, "run").has_value());
  BOOST_TEST(check_launch_kind(run, "debug").has_value());
  BOOST_TEST(check_launch_kind(debug, "run").has_value());
  BOOST_TEST(check_launch_kind(debug, "debug").has_value());
  BOOST_TEST(check_launch_kind(train, "train").has_value());
  auto no = check_launch_kind(train, "run");
  BOOST_REQUIRE(!no.has_value());
  BOOST_TEST(no.error() == "launch entry \"fit\" is kind \"train\": start it with ferry train --launch fit");
  auto no_train = check_launch_kind(run, "train");
  BOOST_REQUIRE(!no_train.has_value());
  BOOST_TEST(no_train.error().find("ferry run --launch train or ferry debug --launch train") != std::string::npos);
  BOOST_TEST(!launch_command(c, train, {}).has_value());
  BOOST_TEST(!train_config_path(c, run).has_value());
}

BOOST_AUTO_TEST_CASE(script_entry_with_args_extra_args_and_env) {
  auto c = project(kProject);
  auto cmd = launch_command(c, c.launch[0], {"--lr", "0.1"});
  BOOST_REQUIRE(cmd.has_value());
  BOOST_TEST(cmd->command == (Words{"train.py", "--epochs", "3", "--lr", "0.1"}));
  BOOST_TEST(cmd->cwd == "");
  BOOST_TEST(cmd->env == (std::map<std::string, std::string>{{"A", "top"}, {"B", "entry"}, {"C", "entry"}}));
}

BOOST_AUTO_TEST_CASE(module_entry_and_its_cwd) {
  auto c = project(kProject);
  auto cmd = launch_command(c, c.launch[1], {});
  BOOST_REQUIRE(cmd.has_value());
  BOOST_TEST(cmd->command == (Words{"-m", "pkg.eval"}));
  BOOST_TEST(cmd->cwd == "runs");
}

BOOST_AUTO_TEST_CASE(script_path_is_named_from_the_cwd) {
  auto c = project(kProject);
  auto cmd = launch_command(c, c.launch[2], {});
  BOOST_REQUIRE(cmd.has_value());
  BOOST_TEST(cmd->command == (Words{"../tools/run.py"}));
  // --cwd wins over the entry's, and the script follows it.
  auto over = launch_command(c, c.launch[2], {}, "tools");
  BOOST_REQUIRE(over.has_value());
  BOOST_TEST(over->cwd == "tools");
  BOOST_TEST(over->command == (Words{"run.py"}));
  BOOST_TEST(!launch_command(c, c.launch[2], {}, "../x").has_value());
  BOOST_TEST(!launch_command(c, c.launch[2], {}, "/tmp").has_value());
  // A script that is not Python runs as a path, never looked up on PATH.
  auto shell = launch_command(c, c.launch[3], {});
  BOOST_REQUIRE(shell.has_value());
  BOOST_TEST(shell->command == (Words{"./go.sh"}));
}

BOOST_AUTO_TEST_CASE(script_in_a_nested_first_mapping_is_named_inside_it) {
  auto c = project(R"({"mappings": [{"local": "src", "remote": "/w/src"}],
                       "launch": [{"name": "a", "script": "src/pkg/a.py", "cwd": "pkg"}]})");
  auto cmd = launch_command(c, c.launch[0], {});
  BOOST_REQUIRE(cmd.has_value());
  BOOST_TEST(cmd->command == (Words{"a.py"}));
  BOOST_TEST(cmd->cwd == "pkg");
}

BOOST_AUTO_TEST_CASE(train_entry_gives_the_config_path_and_env) {
  auto c = project(kProject);
  auto path = train_config_path(c, c.launch[4]);
  BOOST_REQUIRE(path.has_value());
  BOOST_TEST(*path == std::filesystem::absolute("/home/me/proj/train/quick.json"));
  BOOST_TEST(launch_env(c, c.launch[4]) == (std::map<std::string, std::string>{{"A", "top"}, {"B", "top"}}));
}

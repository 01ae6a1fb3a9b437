// Which projects a connect starts the trainer's build for (trainer_install's project_trains):
// a training config anywhere in the tree (as the "Train" lens finds them) or a train launch
// entry; not ferry.json, other JSON, hidden folders, node_modules or big files.
#define BOOST_TEST_MODULE training_project
#include <boost/test/unit_test.hpp>

#include <string>

#include "helper/train/trainer_install.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::training::project_trains;

namespace {
const std::string kConfig = R"({"model": {"kind": "mlp"}, "optimizer": {"kind": "sgd"}, "max_steps": 5})";
}

BOOST_AUTO_TEST_CASE(a_training_config_in_a_sub_folder_makes_a_training_project) {
  ferry::test::TempDir dir("ferry-trains");
  ferry::test::write_file(dir / "ferry.json", R"({"name": "p", "host": "box"})");
  ferry::test::write_file(dir / "data.json", R"({"rows": [1, 2]})");
  BOOST_TEST(!project_trains(dir.path(), false));
  BOOST_TEST(project_trains(dir.path(), true));  // a launch entry of kind train is enough
  ferry::test::write_file(dir / "train" / "quick.json", kConfig);
  BOOST_TEST(project_trains(dir.path(), false));
}

BOOST_AUTO_TEST_CASE(hidden_folders_node_modules_and_ferry_json_do_not_count) {
  ferry::test::TempDir dir("ferry-trains-hidden");
  ferry::test::write_file(dir / ".ferry" / "runs" / "quick.json", kConfig);
  ferry::test::write_file(dir / "node_modules" / "x" / "quick.json", kConfig);
  ferry::test::write_file(dir / "ferry.json", kConfig);
  ferry::test::write_file(dir / "quick.txt", kConfig);
  BOOST_TEST(!project_trains(dir.path(), false));
}

BOOST_AUTO_TEST_CASE(a_missing_root_trains_nothing) {
  BOOST_TEST(!project_trains("/nonexistent/ferry-project", false));
}

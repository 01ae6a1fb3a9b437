// Where `ferry train` runs ferry-train (the config's directory under the mapping) and which
// outputs it pulls back; paths that leave the mapping are refused or skipped, never pulled.
#define BOOST_TEST_MODULE train_launch
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "helper/train/train_launch.hpp"

using namespace ferry::training;
namespace fs = std::filesystem;

BOOST_AUTO_TEST_CASE(join_inside_stays_inside) {
  BOOST_TEST(*join_inside("train", "runs/quick") == "train/runs/quick");
  BOOST_TEST(*join_inside(".", "runs/./quick/") == "runs/quick");
  BOOST_TEST(*join_inside("train", "../out") == "out");
  BOOST_TEST(*join_inside("", ".") == ".");
  BOOST_TEST(!join_inside("train", "../../out").has_value());
  BOOST_TEST(!join_inside(".", "/abs/out").has_value());
}

BOOST_AUTO_TEST_CASE(launch_runs_in_the_config_directory) {
  const fs::path root = fs::temp_directory_path() / ("ferry-train-launch-" + std::to_string(::getpid()));
  fs::create_directories(root / "train");
  std::ofstream(root / "train" / "quick.json") << "{}";
  auto l = make_train_launch(root / "train" / "quick.json", root, "ferry-train", false);
  BOOST_TEST_REQUIRE(l.has_value(), (l ? "" : l.error()));
  BOOST_TEST(l->cwd == "train");
  BOOST_TEST(l->argv == (std::vector<std::string>{"ferry-train", "quick.json"}), boost::test_tools::per_element());
  auto r = make_train_launch(root / "train" / "quick.json", root / "train", "/opt/ferry-train", true);
  BOOST_TEST_REQUIRE(r.has_value());
  BOOST_TEST(r->cwd == ".");
  BOOST_TEST(r->argv == (std::vector<std::string>{"/opt/ferry-train", "quick.json", "--resume"}), boost::test_tools::per_element());
  auto outside = make_train_launch(fs::temp_directory_path() / "elsewhere.json", root, "ferry-train", false);
  BOOST_TEST_REQUIRE(!outside.has_value());
  BOOST_TEST(outside.error().find("not inside the mapped folder") != std::string::npos, outside.error());
  fs::remove_all(root);
}

BOOST_AUTO_TEST_CASE(outputs_to_pull) {
  auto o = train_outputs({{"output_dir", "runs/quick"}}, "train", std::string("runs/quick/checkpoints/ckpt-0000000300.ferry"));
  BOOST_TEST_REQUIRE(o.has_value());
  BOOST_TEST(o->output_dir == "train/runs/quick");
  BOOST_TEST(o->files == (std::vector<std::string>{"train/runs/quick/plot.svg", "train/runs/quick/metrics.csv",
                                                   "train/runs/quick/events.jsonl",
                                                   "train/runs/quick/checkpoints/ckpt-0000000300.ferry"}),
             boost::test_tools::per_element());
  BOOST_TEST(o->skipped.empty());
  // Default output_dir is the run's cwd; no checkpoint event: nothing more.
  auto d = train_outputs(nlohmann::json::object(), ".", std::nullopt);
  BOOST_TEST_REQUIRE(d.has_value());
  BOOST_TEST(d->files.size() == 3u);
  BOOST_TEST(d->files[0] == "plot.svg");
  // Outside the mapping: named, not pulled.
  auto abs = train_outputs({{"output_dir", "/scratch/out"}}, ".", std::string("/scratch/out/checkpoints/c.ferry"));
  BOOST_TEST_REQUIRE(abs.has_value());
  BOOST_TEST(abs->files.empty());
  BOOST_TEST(abs->skipped.size() == 2u);
  BOOST_TEST(!train_outputs({{"output_dir", 3}}, ".", std::nullopt).has_value());
}

BOOST_AUTO_TEST_CASE(local_binary_from_the_environment) {
  ::setenv("FERRY_TRAIN", "/nonexistent/ferry-train", 1);
  auto missing = find_local_train_binary();
  BOOST_TEST_REQUIRE(!missing.has_value());
  BOOST_TEST(missing.error().find("FERRY_TRAIN") != std::string::npos, missing.error());
  ::setenv("FERRY_TRAIN", "/bin/true", 1);
  auto found = find_local_train_binary();
  BOOST_TEST_REQUIRE(found.has_value());
  BOOST_TEST(found->string() == "/bin/true");
  ::unsetenv("FERRY_TRAIN");
  // This test binary has no ferry-train beside it: the message says how to get one.
  auto none = find_local_train_binary();
  if (!none) BOOST_TEST(none.error().find("FERRY_TRAIN") != std::string::npos, none.error());
}

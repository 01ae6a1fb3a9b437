// The trainer's sources as linked into ferry: a .tar.gz holding the box CMakeLists, build.sh, the
// trainer's sources and nlohmann's headers (nothing else of the helper), the same bytes as the
// build's pack file, keyed by its sha256; $FERRY_TRAIN_PACK replaces it, and a bad one is refused.
#define BOOST_TEST_MODULE trainer_pack
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/sha256.hpp"
#include "helper/train/trainer_pack.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::training;

BOOST_AUTO_TEST_CASE(the_built_in_pack_is_the_build_s_pack) {
  ::unsetenv("FERRY_TRAIN_PACK");
  auto pack = trainer_pack();
  BOOST_TEST_REQUIRE(pack.has_value(), (pack ? "" : pack.error()));
  BOOST_TEST(pack->origin == "built in");
  BOOST_TEST(pack->bytes == ferry::test::read_file(FERRY_TRAIN_PACK_FILE));
  BOOST_TEST(pack->sha256.size() == 64u);
  BOOST_TEST(pack->key() == pack->sha256.substr(0, 16));
  // Its listing: the box's build and the trainer, not the helper.
  ferry::test::TempDir dir("ferry-pack");
  const std::string list = (dir / "list").string();
  const std::string cmd = "tar tzf " + std::string(FERRY_TRAIN_PACK_FILE) + " > " + list;
  BOOST_TEST_REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string names = ferry::test::read_file(list);
  for (const char* want : {"CMakeLists.txt\n", "build.sh\n", "remote-runtime/train/main.cpp\n", "remote-runtime/train/CMakeLists.txt\n",
                           "protocol/json_parse_core.hpp\n", "third_party/nlohmann/json.hpp\n"})
    BOOST_TEST(names.find(want) != std::string::npos, want);
  // The pack is C++17 (the box's compiler may be g++ 9): json_parse.hpp's std::expected stays home.
  BOOST_TEST(names.find("protocol/json_parse.hpp") == std::string::npos);
  BOOST_TEST(names.find("helper/") == std::string::npos);
  BOOST_TEST(names.find("remote-runtime/agent") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(ferry_train_pack_replaces_it_and_a_bad_one_is_refused) {
  ferry::test::TempDir dir("ferry-pack-env");
  const auto other = dir / "other.tar.gz";
  ferry::test::write_file(other, ferry::test::read_file(FERRY_TRAIN_PACK_FILE) + std::string(1, '\0'));
  ::setenv("FERRY_TRAIN_PACK", other.c_str(), 1);
  auto pack = trainer_pack();
  BOOST_TEST_REQUIRE(pack.has_value());
  BOOST_TEST(pack->origin == other.string());
  BOOST_TEST(pack->sha256 == ferry::sha256_hex(ferry::test::read_file(other)));
  ::unsetenv("FERRY_TRAIN_PACK");
  BOOST_TEST(pack->sha256 != trainer_pack()->sha256);  // other bytes, another cache key

  ferry::test::write_file(dir / "not.tar.gz", "hello");
  ::setenv("FERRY_TRAIN_PACK", (dir / "not.tar.gz").c_str(), 1);
  auto bad = trainer_pack();
  BOOST_TEST_REQUIRE(!bad.has_value());
  BOOST_TEST(bad.error().find("is not a .tar.gz") != std::string::npos);
  ::setenv("FERRY_TRAIN_PACK", (dir / "missing.tar.gz").c_str(), 1);
  bad = trainer_pack();
  BOOST_TEST_REQUIRE(!bad.has_value());
  BOOST_TEST(bad.error().find("cannot be read") != std::string::npos);
  ::unsetenv("FERRY_TRAIN_PACK");
  BOOST_TEST(ferry::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// The config validator against the corpus (good configs parse, bad ones fail at the expected
// JSON pointer), defaults, normalisation round trips, and file loading errors.
#define BOOST_TEST_MODULE train_config
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "remote-runtime/train/memory_size.hpp"
#include "remote-runtime/train/train_config.hpp"

using namespace ferry::train;
using nlohmann::json;

namespace {

json load_corpus() {
  std::ifstream in(FERRY_TRAIN_CONFIG_CORPUS);
  BOOST_TEST_REQUIRE(static_cast<bool>(in));
  return json::parse(in);
}

std::filesystem::path temp_file(const std::string& name, const std::string& content) {
  const auto dir = std::filesystem::temp_directory_path() / ("ferry_train_config_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name) << content;
  return dir / name;
}

}  // namespace

BOOST_AUTO_TEST_CASE(corpus_good_and_bad) {
  const json corpus = load_corpus();
  int good = 0, bad = 0;
  for (const auto& c : corpus) {
    const std::string name = c["name"];
    auto r = parse_train_config(c["config"]);
    if (c["valid"].get<bool>()) {
      ++good;
      BOOST_TEST(r.has_value(), name << ": " << (r ? "" : r.error().to_string()));
    } else {
      ++bad;
      BOOST_TEST_REQUIRE(!r.has_value(), name << " was accepted");
      BOOST_TEST(r.error().pointer == c["pointer"].get<std::string>(), name << ": " << r.error().to_string());
      BOOST_TEST(!r.error().message.empty());
    }
  }
  BOOST_TEST(good >= 20);
  BOOST_TEST(bad >= 50);
}

BOOST_AUTO_TEST_CASE(normalised_round_trip) {
  for (const auto& c : load_corpus()) {
    if (!c["valid"].get<bool>()) continue;
    auto first = parse_train_config(c["config"]);
    BOOST_TEST_REQUIRE(first.has_value());
    const json normal = to_json(*first);
    auto second = parse_train_config(normal);
    BOOST_TEST_REQUIRE(second.has_value(), c["name"].get<std::string>() << ": " << (second ? "" : second.error().to_string()));
    BOOST_TEST(to_json(*second) == normal, c["name"].get<std::string>());
  }
}

BOOST_AUTO_TEST_CASE(defaults) {
  auto c = parse_train_config(json{{"max_steps", 5}});
  BOOST_TEST_REQUIRE(c.has_value());
  BOOST_TEST((c->model.kind == ModelKind::mlp));
  BOOST_TEST((c->optimizer.kind == OptimizerKind::adamw));
  BOOST_TEST(c->optimizer.weight_decay == 0.01);  // adamw's default decay
  BOOST_TEST(c->batch_size.value == 64);
  BOOST_TEST(!c->batch_size.automatic);
  BOOST_TEST(c->device == "auto");
  BOOST_TEST(!c->epochs.has_value());
  BOOST_TEST(*c->max_steps == 5);
  auto sgd = parse_train_config(json{{"max_steps", 5}, {"optimizer", {{"kind", "sgd"}}}});
  BOOST_TEST_REQUIRE(sgd.has_value());
  BOOST_TEST(sgd->optimizer.weight_decay == 0.0);
  auto explicit_decay = parse_train_config(json{{"max_steps", 5}, {"optimizer", {{"weight_decay", 0}}}});
  BOOST_TEST(explicit_decay->optimizer.weight_decay == 0.0);
}

BOOST_AUTO_TEST_CASE(auto_batch_fields) {
  auto c = parse_train_config(json::parse(R"({"max_steps": 1, "batch_size": "auto", "device": "cpu",
      "auto_batch": {"cpu_memory_limit": "512MiB", "max": 256, "memory_fraction": 0.5}})"));
  BOOST_TEST_REQUIRE(c.has_value());
  BOOST_TEST(c->batch_size.automatic);
  BOOST_TEST(*c->batch_size.cpu_memory_limit_bytes == 512LL * 1024 * 1024);
  BOOST_TEST(c->batch_size.max == 256);
  BOOST_TEST(c->batch_size.memory_fraction == 0.5);
  BOOST_TEST(to_json(*c)["batch_size"] == "auto");
  BOOST_TEST(to_json(*c)["auto_batch"]["cpu_memory_limit"] == 512LL * 1024 * 1024);
}

BOOST_AUTO_TEST_CASE(memory_sizes) {
  BOOST_TEST(*parse_memory_size("4GiB") == 4LL << 30);
  BOOST_TEST(*parse_memory_size("4 GB") == 4'000'000'000LL);
  BOOST_TEST(*parse_memory_size("1.5KiB") == 1536);
  BOOST_TEST(*parse_memory_size("123") == 123);
  BOOST_TEST(!parse_memory_size("").has_value());
  BOOST_TEST(!parse_memory_size("0").has_value());
  BOOST_TEST(!parse_memory_size("GiB").has_value());
  BOOST_TEST(!parse_memory_size("4 gib").has_value());
  BOOST_TEST(!parse_memory_size("1.GiB").has_value());
  BOOST_TEST(!parse_memory_size("99999999999999999999").has_value());
  BOOST_TEST(format_bytes(1536) == "1.50 KiB");
}

BOOST_AUTO_TEST_CASE(error_text_has_pointer) {
  auto r = parse_train_config(json::parse(R"({"max_steps": 1, "optimizer": {"lr": -1}})"));
  BOOST_TEST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().to_string().starts_with("/optimizer/lr: "));
  auto root = parse_train_config(json::object());
  BOOST_TEST(root.error().to_string().starts_with("(root): "));
}

BOOST_AUTO_TEST_CASE(load_from_files) {
  auto ok = load_train_config(temp_file("ok.json", R"({"epochs": 2, "batch_size": 16})"));
  BOOST_TEST_REQUIRE(ok.has_value());
  BOOST_TEST(*ok->epochs == 2);
  auto broken = load_train_config(temp_file("broken.json", R"({"epochs": 2,,})"));
  BOOST_TEST_REQUIRE(!broken.has_value());
  BOOST_TEST(broken.error().pointer.empty());
  BOOST_TEST(broken.error().message.find("not valid JSON") != std::string::npos, broken.error().message);
  auto missing = load_train_config("/nonexistent/ferry/config.json");
  BOOST_TEST_REQUIRE(!missing.has_value());
  BOOST_TEST(missing.error().message.find("cannot open") != std::string::npos);
  auto bad_field = load_train_config(temp_file("bad.json", R"({"epochs": 2, "precision": "fp16", "device": "cpu"})"));
  BOOST_TEST(bad_field.error().pointer == "/precision");
}

// A config nested 100,000 levels deep is refused at the parse (the validator copies documents
// recursively), with the place, instead of overflowing the stack.
BOOST_AUTO_TEST_CASE(a_file_nested_too_deep_is_refused_not_a_crash) {
  const std::string deep = R"({"epochs": 2, "data": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto r = load_train_config(temp_file("deep.json", deep));
  BOOST_TEST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().message.find("nested deeper than 256 levels at line 1, column 278") != std::string::npos,
             r.error().message);
}

// Training-config diagnostics: the schema's conditional rules and ferry-train's own rules at
// exact ranges, one diagnostic per place, recognising a config while it is typed, and the
// embedded schema agreeing with ferry-train's validator on the shared corpus.
#define BOOST_TEST_MODULE train_diagnostics
#include <boost/test/unit_test.hpp>

#include <fstream>

#include "helper/diagnostics/config_diagnostics.hpp"
#include "protocol/spec_schemas.hpp"
#include "remote-runtime/train/train_config.hpp"

using namespace ferry::diagnostics;
using nlohmann::json;

namespace ferry::diagnostics {
std::ostream& boost_test_print_type(std::ostream& os, const TextPosition& p) { return os << p.line << ":" << p.character; }
std::ostream& boost_test_print_type(std::ostream& os, const TextRange& r) {
  boost_test_print_type(os, r.start) << "-";
  return boost_test_print_type(os, r.end);
}
}  // namespace ferry::diagnostics

namespace {

TextRange at(int line, int from, int to) { return {{line, from}, {line, to}}; }

Diagnostic only(std::string_view text) {
  auto d = diagnose_train_config(text);
  BOOST_REQUIRE_MESSAGE(d.size() == 1u, d.size() << " diagnostics for " << text << (d.empty() ? "" : "; first: " + d[0].message));
  return d[0];
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  BOOST_REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  return json::parse(in);
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_samples_have_none) {
  for (const char* name : {"quick", "cnn", "mlp-bench", "transformer"}) {
    std::ifstream in(std::string(FERRY_SAMPLES_DIR "/train/") + name + ".json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    BOOST_REQUIRE(!text.empty());
    auto d = diagnose_train_config(text);
    BOOST_TEST(d.empty(), name << ": " << (d.empty() ? "" : d[0].message));
  }
}

BOOST_AUTO_TEST_CASE(a_rule_only_ferry_train_knows_is_reported_with_its_code) {
  std::string text =
      "{\n"
      "  \"model\": {\"kind\": \"transformer\", \"d_model\": 100, \"heads\": 3},\n"
      "  \"data\": {\"task\": \"language_model\"},\n"
      "  \"max_steps\": 1\n"
      "}";
  auto d = only(text);
  BOOST_TEST(d.code == "ferry.trainConfig");
  BOOST_TEST(d.pointer == "/model/heads");
  BOOST_TEST(d.message == "heads (3) must divide d_model (100)");
  BOOST_TEST(d.range == at(1, 60, 61));
  d = only(R"({"max_steps": 100, "optimizer": {"lr": 0.001}, "schedule": {"kind": "cosine", "min_lr": 0.01}})");
  BOOST_TEST(d.message == "min_lr must not exceed optimizer.lr");
}

BOOST_AUTO_TEST_CASE(a_conditional_requirement_goes_on_the_parent_key_once) {
  std::string text =
      "{\n"
      "  \"data\": {\"source\": \"mnist\"},\n"
      "  \"epochs\": 1\n"
      "}";
  auto d = only(text);  // the schema and ferry-train both see it
  BOOST_TEST(d.code == "schema");
  BOOST_TEST(d.pointer == "/data/path");
  BOOST_TEST(d.message == R"(missing required field "path" (when "data.source" is "mnist"))");
  BOOST_TEST(d.range == at(1, 2, 8));
}

BOOST_AUTO_TEST_CASE(a_missing_section_gets_the_validators_words_for_what_it_needs) {
  // The schema: "auto_batch" is missing; ferry-train: what inside it. One diagnostic, its words.
  auto d = only(R"({"max_steps": 1, "batch_size": "auto", "device": "cpu"})");
  BOOST_TEST(d.message == R"(batch_size "auto" on cpu needs auto_batch.cpu_memory_limit (the memory budget))");
  BOOST_TEST(d.range == at(0, 0, 1));
}

BOOST_AUTO_TEST_CASE(epochs_or_max_steps) {
  std::string neither = "{\n  \"model\": {\"kind\": \"mlp\"}\n}";
  auto d = only(neither);
  BOOST_TEST(d.message == R"(missing "epochs" or "max_steps" (give exactly one))");
  BOOST_TEST(d.range == at(0, 0, 1));  // the file's opening brace
  std::string both = "{\"epochs\": 1,\n \"max_steps\": 5}";
  d = only(both);
  BOOST_TEST(d.message == R"(give only one of "epochs" and "max_steps", not both)");
  BOOST_TEST(d.range == at(1, 1, 12));
}

BOOST_AUTO_TEST_CASE(values_keys_and_words_from_the_validator) {
  auto d = only(R"({"max_steps": 1, "precision": "fp8"})");
  BOOST_TEST(d.range == at(0, 30, 35));
  BOOST_TEST(d.message == R"(expected one of "fp32", "bf16", "fp16", got "fp8" (did you mean "fp32"?))");
  d = only(R"({"max_steps": 1, "optimiser": {}})");
  BOOST_TEST(d.range == at(0, 17, 28));
  BOOST_TEST(d.message == R"("optimiser" is not a known field (did you mean "optimizer"?))");
  d = only(R"({"max_steps": 100, "batch_size": "auto", "device": "cpu", "auto_batch": {"cpu_memory_limit": "4 gigs"}})");
  BOOST_TEST(d.pointer == "/auto_batch/cpu_memory_limit");
  BOOST_TEST(d.message.find("pattern") == std::string::npos, d.message);  // ferry-train's words, not a regex
  d = only(R"({"max_steps": 1, "device": "tpu"})");
  BOOST_TEST(d.message == R"(expected "auto", "cpu", "cuda" or "cuda:N")");
}

BOOST_AUTO_TEST_CASE(syntax_errors_and_fixes) {
  std::string text = "{\n  \"model\": {\"kind\": \"mlp\",},\n  \"epochs\": 1\n}";
  auto d = only(text);
  BOOST_TEST(d.code == "json");
  BOOST_TEST(d.range == at(1, 26, 27));
  BOOST_TEST(diagnose_train_config("{\n  \"model\": {\"kind\": \"mlp\"},\n  \"epochs\": 1\n}").empty());
}

// Still recognised as a training config by its keys, and a json error, not a crash.
BOOST_AUTO_TEST_CASE(a_config_nested_too_deep_is_one_json_error) {
  const std::string deep = "{\"model\": {\"kind\": \"mlp\"}, \"data\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  BOOST_TEST(looks_like_train_config(deep));
  auto d = only(deep);
  BOOST_TEST(d.code == "json");
  BOOST_TEST(d.message == "nested deeper than 256 levels");
  BOOST_TEST(d.range == at(0, 35 + 255, 35 + 256));
}

BOOST_AUTO_TEST_CASE(recognising_a_training_config) {
  BOOST_TEST(looks_like_train_config(R"({"model": {"kind": "mlp"}, "max_steps": 10})"));
  BOOST_TEST(looks_like_train_config(R"({"model": {}, "data": {}})"));
  BOOST_TEST(looks_like_train_config(R"({"optimizer": {}, "model": {}})"));
  BOOST_TEST(looks_like_train_config(R"({"epochs": 2, "model": {"kind": )"));  // still being typed
  BOOST_TEST(looks_like_train_config(R"({"$schema": "https://ferry.dev/schemas/train-config.schema.json"})"));
  BOOST_TEST(!looks_like_train_config(R"({"model": {}})"));
  BOOST_TEST(!looks_like_train_config(R"({"host": "local", "mappings": []})"));
  BOOST_TEST(!looks_like_train_config(R"([{"model": {}, "epochs": 1}])"));
  BOOST_TEST(!looks_like_train_config(R"({"config": {"model": {}, "epochs": 1}})"));
  BOOST_TEST(!looks_like_train_config("model epochs"));
  BOOST_TEST(!looks_like_train_config(""));
}

// The same corpus check_train_schema.py runs through python's jsonschema, here through the
// checker the binary uses: it must agree with ferry-train's validator exactly as jsonschema does.
BOOST_AUTO_TEST_CASE(embedded_schema_agrees_with_the_validator_on_the_corpus) {
  json corpus = read_json(FERRY_TRAIN_CONFIG_CORPUS);
  const auto& schema = ferry::protocol::train_config_schema();
  int checked = 0;
  for (const auto& c : corpus) {
    std::string name = c["name"];
    auto violations = schema.validate(c["config"]);
    auto diagnostics = diagnose_train_config(c["config"].dump());
    if (c["valid"].get<bool>()) {
      BOOST_TEST(violations.empty(), name << ": " << (violations.empty() ? "" : violations[0].message));
      BOOST_TEST(diagnostics.empty(), name);
    } else {
      bool schema_catches = c.value("schema_catches", true);
      BOOST_TEST(violations.empty() != schema_catches, name);
      std::string pointer = c["pointer"];
      bool placed = false;
      for (const auto& d : diagnostics) placed = placed || d.pointer == pointer || d.pointer.starts_with(pointer + "/") || pointer.empty();
      BOOST_TEST(placed, name << ": nothing at " << pointer << (diagnostics.empty() ? "" : ", first at " + diagnostics[0].pointer));
    }
    ++checked;
  }
  BOOST_TEST(checked > 80);
}

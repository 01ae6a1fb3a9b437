// The JSON Schema checker: every supported keyword fires where it should, with the pointer, target
// and message an editor shows, and stays quiet where it should not; unsupported schemas are refused.
#define BOOST_TEST_MODULE json_schema
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <sstream>

#include "protocol/spec_schemas.hpp"
#include "protocol/spelling.hpp"

using ferry::protocol::JsonSchema;
using ferry::protocol::SchemaTarget;
using ferry::protocol::SchemaViolation;
using nlohmann::json;

namespace {

std::vector<SchemaViolation> check(const JsonSchema& schema, std::string_view instance) {
  return schema.validate(json::parse(instance));
}

std::vector<SchemaViolation> check(std::string_view schema, std::string_view instance) {
  auto compiled = JsonSchema::compile(json::parse(schema));
  BOOST_REQUIRE_MESSAGE(compiled.has_value(), (compiled ? "" : compiled.error()));
  return check(*compiled, instance);
}

// The one violation expected, with its pointer and target.
SchemaViolation only(const std::vector<SchemaViolation>& v, const std::string& pointer, SchemaTarget target) {
  BOOST_REQUIRE_EQUAL(v.size(), 1u);
  BOOST_TEST(v[0].pointer == pointer);
  BOOST_TEST((v[0].target == target));
  return v[0];
}

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const JsonSchema& project() { return ferry::protocol::ferry_schema(); }
const JsonSchema& train() { return ferry::protocol::train_config_schema(); }

}  // namespace

BOOST_AUTO_TEST_CASE(embedded_schemas_are_the_spec_files_and_compile) {
  BOOST_TEST(ferry::protocol::ferry_schema_text() == read_file(FERRY_SPEC_DIR "/ferry.schema.json"));
  BOOST_TEST(ferry::protocol::train_config_schema_text() == read_file(FERRY_SPEC_DIR "/train-config.schema.json"));
  BOOST_TEST(project().document()["title"] == "ferry project config (ferry.json)");
  BOOST_TEST(train().document()["title"] == "ferry-train config");
}

BOOST_AUTO_TEST_CASE(type_message_names_the_bounds_and_what_was_given) {
  auto v = only(check(project(), R"({"tunnels": [{"name": "t", "remotePort": "22"}]})"), "/tunnels/0/remotePort",
                SchemaTarget::value);
  BOOST_TEST(v.keyword == "type");
  BOOST_TEST(v.message == "expected an integer from 1 to 65535, got \"22\"");
  v = only(check(project(), R"({"host": 22})"), "/host", SchemaTarget::value);
  BOOST_TEST(v.message == "expected a string matching " + project().document()["properties"]["host"]["pattern"].get<std::string>() + ", got 22");
  v = only(check(project(), R"({"autostop": {"enabled": "yes"}})"), "/autostop/enabled", SchemaTarget::value);
  BOOST_TEST(v.message == "expected true or false, got \"yes\"");
  v = only(check(project(), R"({"mappings": {"local": "."}})"), "/mappings", SchemaTarget::value);
  BOOST_TEST(v.message == "expected a non-empty array, got an object");
  BOOST_TEST(check(project(), R"({"tunnels": [{"name": "t", "remotePort": 8080.0}]})").empty());  // 2020-12: an integer
}

BOOST_AUTO_TEST_CASE(enum_and_const_suggest_the_near_value) {
  auto v = only(check(project(), R"({"tunnels": [{"name": "t", "kind": "locl", "remotePort": 1}]})"), "/tunnels/0/kind",
                SchemaTarget::value);
  BOOST_TEST(v.keyword == "enum");
  BOOST_TEST(v.message == R"(expected one of "local", "reverse", got "locl" (did you mean "local"?))");
  v = only(check(train(), R"({"max_steps": 1, "precision": "fp64"})"), "/precision", SchemaTarget::value);
  BOOST_TEST(v.message == R"(expected one of "fp32", "bf16", "fp16", got "fp64" (did you mean "fp32"?))");  // a tie: the first
  v = only(check(R"({"const": "auto"})", R"("manual")"), "", SchemaTarget::value);
  BOOST_TEST(v.message == R"(expected "auto", got "manual")");
  BOOST_TEST(check(R"({"const": 1})", "1.0").empty());
}

BOOST_AUTO_TEST_CASE(string_lengths_and_patterns) {
  // "" breaks minLength and the pattern: only the more basic one is reported.
  auto v = only(check(project(), R"({"name": ""})"), "/name", SchemaTarget::value);
  BOOST_TEST(v.keyword == "minLength");
  BOOST_TEST(v.message == "expected a non-empty string");
  v = only(check(project(), R"({"name": "a/b"})"), "/name", SchemaTarget::value);
  BOOST_TEST(v.keyword == "pattern");
  BOOST_TEST(v.quotes_pattern);
  BOOST_TEST(v.message.starts_with(R"("a/b" does not match the pattern ^)"));
  v = only(check(R"({"maxLength": 3})", R"("été!")"), "", SchemaTarget::value);  // counts characters, not bytes
  BOOST_TEST(v.message == "expected at most 3 characters, got 4");
  BOOST_TEST(check(R"({"maxLength": 3})", R"("été")").empty());
  v = only(check(R"({"minLength": 2})", R"("a")"), "", SchemaTarget::value);
  BOOST_TEST(v.message == "expected at least 2 characters, got 1");
}

BOOST_AUTO_TEST_CASE(very_long_strings_are_not_fed_to_the_regex) {
  std::string path(200000, 'a');  // std::regex would overflow the stack on this
  auto v = only(check(project(), R"({"mappings": [{"local": ")" + path + R"(", "remote": "/r"}]})"), "/mappings/0/local",
                SchemaTarget::value);
  BOOST_TEST(v.message == "too long: 200000 bytes (at most 4096)");
  BOOST_TEST(!v.quotes_pattern);
}

BOOST_AUTO_TEST_CASE(numeric_bounds_inclusive_exclusive_and_exact_for_big_integers) {
  auto v = only(check(train(), R"({"max_steps": 1, "optimizer": {"lr": 0}})"), "/optimizer/lr", SchemaTarget::value);
  BOOST_TEST(v.keyword == "exclusiveMinimum");
  BOOST_TEST(v.message == "expected a number > 0 and <= 10, got 0");
  v = only(check(train(), R"({"max_steps": 1, "model": {"dropout": 1}})"), "/model/dropout", SchemaTarget::value);
  BOOST_TEST(v.keyword == "exclusiveMaximum");
  BOOST_TEST(v.message == "expected a number >= 0 and < 1, got 1");
  v = only(check(project(), R"({"autostop": {"idleMinutes": 10081}})"), "/autostop/idleMinutes", SchemaTarget::value);
  BOOST_TEST(v.keyword == "maximum");
  BOOST_TEST(v.message == "expected an integer from 1 to 10080, got 10081");
  v = only(check(train(), R"({"max_steps": 0})"), "/max_steps", SchemaTarget::value);
  BOOST_TEST(v.message == "expected an integer >= 1, got 0");
  BOOST_TEST(check(train(), R"({"max_steps": 1, "seed": 18446744073709551615})").empty());
  v = only(check(train(), R"({"max_steps": 1, "seed": -1})"), "/seed", SchemaTarget::value);
  BOOST_TEST(v.keyword == "minimum");
  BOOST_TEST(check(train(), R"({"max_steps": 1, "optimizer": {"lr": 1e-9}})").empty());
}

BOOST_AUTO_TEST_CASE(arrays_items_and_lengths) {
  auto v = only(check(project(), R"({"mappings": []})"), "/mappings", SchemaTarget::value);
  BOOST_TEST(v.keyword == "minItems");
  v = only(check(project(), R"({"exclude": ["a", 1]})"), "/exclude/1", SchemaTarget::value);
  BOOST_TEST(v.message == "expected a non-empty string, got 1");
  json hidden = json::array();
  for (int i = 0; i < 65; ++i) hidden.push_back(8);
  v = only(check(train(), json{{"max_steps", 1}, {"model", {{"hidden", hidden}}}}.dump()), "/model/hidden", SchemaTarget::value);
  BOOST_TEST(v.message == "expected at most 64 items, got 65");
  v = only(check(R"({"minItems": 2})", "[1]"), "", SchemaTarget::value);
  BOOST_TEST(v.message == "expected at least 2 items, got 1");
}

BOOST_AUTO_TEST_CASE(required_points_at_the_missing_member) {
  auto v = only(check(project(), R"({"mappings": [{"local": "."}]})"), "/mappings/0/remote", SchemaTarget::missing);
  BOOST_TEST(v.keyword == "required");
  BOOST_TEST(v.message == R"(missing required field "remote")");
}

BOOST_AUTO_TEST_CASE(unknown_fields_are_keys_with_a_suggestion_or_the_list) {
  auto v = only(check(project(), R"({"hots": "gpu"})"), "/hots", SchemaTarget::key);
  BOOST_TEST(v.keyword == "additionalProperties");
  BOOST_TEST(v.message == R"("hots" is not a known field (did you mean "host"?))");
  v = only(check(project(), R"({"autostop": {"zzz": 1}})"), "/autostop/zzz", SchemaTarget::key);
  BOOST_TEST(v.message == R"("zzz" is not a known field; known fields: "action", "command", "enabled", "gpuUtilBelow", "idleMinutes", "preStop")");
  v = only(check(project(), R"({"env": {"OK": 2}})"), "/env/OK", SchemaTarget::value);  // additionalProperties: a schema
  BOOST_TEST(v.message == "expected a string, got 2");
  v = only(check(project(), R"({"env": {"a/b": "1"}})"), "/env/a~1b", SchemaTarget::key);
  BOOST_TEST(v.keyword == "propertyNames");
  BOOST_TEST(v.quotes_pattern);
}

BOOST_AUTO_TEST_CASE(any_of_names_every_alternative) {
  auto v = only(check(train(), R"({"max_steps": 1, "batch_size": 0})"), "/batch_size", SchemaTarget::value);
  BOOST_TEST(v.keyword == "anyOf");
  BOOST_TEST(v.message == R"(expected an integer from 1 to 16777216 or "auto", got 0)");
  BOOST_TEST(check(train(), R"({"max_steps": 1, "batch_size": "auto"})").empty());
  BOOST_TEST(check(train(), R"({"max_steps": 1, "batch_size": 64})").empty());
  v = only(check(train(), R"({"max_steps": 1, "auto_batch": {"cpu_memory_limit": "4XB"}})"), "/auto_batch/cpu_memory_limit",
           SchemaTarget::value);
  BOOST_TEST(v.quotes_pattern);
}

BOOST_AUTO_TEST_CASE(one_of_members_missing_or_both) {
  auto v = only(check(train(), R"({"model": {}})"), "", SchemaTarget::object);
  BOOST_TEST(v.keyword == "oneOf");
  BOOST_TEST(v.message == R"(missing "epochs" or "max_steps" (give exactly one))");
  v = only(check(train(), R"({"epochs": 1, "max_steps": 5})"), "/max_steps", SchemaTarget::key);
  BOOST_TEST(v.message == R"(give only one of "epochs" and "max_steps", not both)");
  v = only(check(R"({"oneOf": [{"type": "integer"}, {"type": "number"}]})", "1"), "", SchemaTarget::value);
  BOOST_TEST(v.message == "matches more than one of the allowed forms");
  v = only(check(R"({"oneOf": [{"type": "integer"}, {"const": "x"}]})", "true"), "", SchemaTarget::value);
  BOOST_TEST(v.message == R"(expected an integer or "x", got true)");
}

BOOST_AUTO_TEST_CASE(if_then_else_say_when_the_rule_applies) {
  auto v = only(check(train(), R"({"max_steps": 1, "data": {"source": "mnist", "path": "d", "task": "regression"}})"),
                "/data/task", SchemaTarget::value);
  BOOST_TEST(v.message == R"(expected "classification", got "regression" (when "data.source" is "mnist"))");
  v = only(check(train(), R"({"max_steps": 1, "data": {"source": "tensor", "path": "x"}})"), "/data/labels_path",
           SchemaTarget::missing);
  BOOST_TEST(v.message == R"(missing required field "labels_path" (when "data.source" is "tensor" and "data.task" is not "language_model"))");
  v = only(check(train(), R"({"max_steps": 1, "model": {"kind": "transformer"}})"), "/data", SchemaTarget::missing);
  BOOST_TEST(v.message == R"(missing required field "data" (when "model.kind" is "transformer"))");
  v = only(check(train(), R"({"max_steps": 1, "eval": {"early_stopping_patience": 2}})"), "/eval/every_steps",
           SchemaTarget::missing);
  BOOST_TEST(v.message == R"(missing required field "every_steps" (when "eval.early_stopping_patience" >= 1))");
  // else + nested if: "kind is not cnn" is dropped once "kind is mlp" says more.
  v = only(check(train(), R"({"max_steps": 1, "data": {"source": "mnist", "path": "d"}, "model": {"kind": "mlp", "input_dim": 100}})"),
           "/model/input_dim", SchemaTarget::value);
  BOOST_TEST(v.message == R"(expected 784, got 100 (when "data.source" is "mnist" and "model.kind" is "mlp"))");
  v = only(check(R"({"if": {"const": 1}, "then": true, "else": {"type": "string"}})", "2"), "", SchemaTarget::value);
  BOOST_TEST(v.message == "expected a string, got 2");  // an undescribable condition adds nothing
  BOOST_TEST(check(train(), R"({"max_steps": 1, "data": {"source": "mnist", "path": "d"}})").empty());
}

BOOST_AUTO_TEST_CASE(not_and_false) {
  auto v = only(check(train(), R"({"max_steps": 1, "device": "cpu", "precision": "fp16"})"), "/precision", SchemaTarget::value);
  BOOST_TEST(v.keyword == "not");
  BOOST_TEST(v.message == R"("fp16" is not allowed (when "device" is "cpu"))");
  BOOST_TEST(check(train(), R"({"max_steps": 1, "device": "cuda", "precision": "fp16"})").empty());
  v = only(check(R"({"not": {"type": "string"}})", R"("x")"), "", SchemaTarget::value);
  BOOST_TEST(v.message == "must not be a string");
  v = only(check(R"({"properties": {"a": false}})", R"({"a": 1})"), "/a", SchemaTarget::value);
  BOOST_TEST(v.message == "not allowed here");
}

BOOST_AUTO_TEST_CASE(every_independent_error_is_reported) {
  auto v = check(project(), R"({"hots": 1, "name": "a b", "tunnels": [{"name": "t"}], "autostop": {"action": "halt"}})");
  BOOST_TEST(v.size() == 4u);
}

BOOST_AUTO_TEST_CASE(unsupported_schemas_are_refused_at_compile_time) {
  auto e = JsonSchema::compile(json::parse(R"({"type": "object", "dependentRequired": {}})"));
  BOOST_REQUIRE(!e);
  BOOST_TEST(e.error() == R"(#: keyword "dependentRequired" is not supported)");
  e = JsonSchema::compile(json::parse(R"({"properties": {"a": {"$ref": "#/$defs/nope"}}})"));
  BOOST_REQUIRE(!e);
  BOOST_TEST(e.error() == "#/properties/a/$ref: does not resolve");
  BOOST_TEST(!JsonSchema::compile(json::parse(R"({"$ref": "other.json#/a"})")));
  BOOST_TEST(!JsonSchema::compile(json::parse(R"({"pattern": "(unclosed"})")));
  BOOST_TEST(!JsonSchema::compile(json::parse(R"({"type": "text"})")));
  BOOST_TEST(!JsonSchema::compile(json::parse(R"({"minLength": -1})")));
  BOOST_TEST(!JsonSchema::compile(json::parse(R"({"$defs": {"x": {"format": "uri"}}})")));
  BOOST_TEST(!JsonSchema::compile(json::parse(R"(["not a schema"])")));
}

BOOST_AUTO_TEST_CASE(spelling_suggestions_are_typos_not_other_words) {
  std::vector<std::string> names{"host", "name", "env", "mappings"};
  BOOST_TEST(ferry::protocol::closest_spelling("hots", names).value_or("") == "host");
  BOOST_TEST(ferry::protocol::closest_spelling("mapings", names).value_or("") == "mappings");
  BOOST_TEST(ferry::protocol::closest_spelling("HOST", names).value_or("") == "host");  // keys are case-sensitive
  BOOST_TEST(!ferry::protocol::closest_spelling("host", names));  // the word itself is no suggestion
  BOOST_TEST(!ferry::protocol::closest_spelling("xy", names));
  BOOST_TEST(!ferry::protocol::closest_spelling("protect", names));
  BOOST_TEST(ferry::protocol::edit_distance("kitten", "sitting") == 3u);
}

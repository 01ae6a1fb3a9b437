// The embedded schemas, compiled once: see spec_schemas.hpp.
#include "protocol/spec_schemas.hpp"

#include <stdexcept>

#include "protocol/json_parse.hpp"

namespace ferry::protocol {
namespace {

JsonSchema compile_embedded(std::string_view text, std::string_view name) {
  auto doc = parse_json_text(text);
  if (!doc) throw std::logic_error("embedded " + std::string(name) + ": " + doc.error().to_string());
  auto schema = JsonSchema::compile(*doc);
  if (!schema) throw std::logic_error("embedded " + std::string(name) + ": " + schema.error());
  return *schema;
}

}  // namespace

const JsonSchema& ferry_schema() {
  static const JsonSchema schema = compile_embedded(ferry_schema_text(), "ferry.schema.json");
  return schema;
}

const JsonSchema& train_config_schema() {
  static const JsonSchema schema = compile_embedded(train_config_schema_text(), "train-config.schema.json");
  return schema;
}

}  // namespace ferry::protocol

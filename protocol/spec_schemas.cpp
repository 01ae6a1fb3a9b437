// The embedded schemas, compiled once: see spec_schemas.hpp.
#include "protocol/spec_schemas.hpp"

#include <stdexcept>

namespace ferry::protocol {
namespace {

JsonSchema compile_embedded(std::string_view text, std::string_view name) {
  auto schema = JsonSchema::compile(nlohmann::json::parse(text));
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

// The JSON Schemas of protocol/spec/, embedded in the binary at build time
// (protocol/embed_text.cmake), so nothing reads the source tree at run time.
#pragma once

#include <string_view>

#include "protocol/json_schema.hpp"

namespace ferry::protocol {

std::string_view ferry_schema_text();         // protocol/spec/ferry.schema.json
std::string_view train_config_schema_text();  // protocol/spec/train-config.schema.json

// Compiled on first use (thread-safe). Both always compile: tests/unit/protocol checks it, so a
// failure here (an exception) means the build embedded a schema no test has seen.
const JsonSchema& ferry_schema();
const JsonSchema& train_config_schema();

}  // namespace ferry::protocol

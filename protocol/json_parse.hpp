// The one way ferry parses JSON it did not write in this process (documents in messages, files
// read from disk, lines from other programs): nlohmann's parser behind a nesting limit. The
// parse itself is iterative, but nlohmann's copy, comparison and dump recurse once per level, so
// a 100,000-deep "[[[[..." that parsed would later overflow the stack somewhere else. The parse
// itself is json_parse_core.hpp's (C++17, so ferry-train's box pack carries it); this is its
// std::expected face for the helper and the agent.
#pragma once

#include <expected>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "protocol/json_parse_core.hpp"

namespace ferry::protocol {

// Parses `text` as one JSON value (plain JSON unless options.ignore_comments; a UTF-8 BOM is
// skipped; a NUL byte ends the input, as in nlohmann's own parse). Never throws for bad input.
inline std::expected<nlohmann::json, JsonParseError> parse_json_text(std::string_view text, JsonParseOptions options = {}) {
  nlohmann::json root;
  if (auto error = parse_json_into(text, root, options)) return std::unexpected(std::move(*error));
  return root;
}

}  // namespace ferry::protocol

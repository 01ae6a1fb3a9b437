// Body encodings for the two wires: JSON text to the IDE, CBOR to the agent. Decoding bounds
// nesting depth, because a peer-sent "[[[[..." would otherwise exhaust the stack in the
// recursive copy and serialisation code that runs after parsing.
#pragma once

#include <cstddef>
#include <expected>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/json_parse.hpp"

namespace ferry::protocol {

enum class Encoding { json, cbor };

inline constexpr std::size_t kMaxNestingDepth = kMaxJsonDepth;  // the one limit, documents' too

// Parses one message body. The error string says what was wrong, for a -32700 reply.
std::expected<nlohmann::json, std::string> decode_body(std::string_view body, Encoding encoding,
                                                       std::size_t max_depth = kMaxNestingDepth);

// Serialises one message body. Invalid UTF-8 in strings is replaced, never thrown on.
std::string encode_body(const nlohmann::json& value, Encoding encoding);

}  // namespace ferry::protocol

// A JSON Schema (draft 2020-12) checker for the keywords ferry's own schemas use
// (protocol/spec/*.schema.json), with messages for people and the JSON pointer of every
// violation, so editors can underline the exact place. A keyword it does not know makes
// compile() fail: a schema can never grow a rule this checker would silently skip.
//
// Supported: type, enum, const, minLength, maxLength, pattern, minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, minItems, maxItems, items, required, properties,
// additionalProperties, propertyNames, $ref (local "#/..." only), allOf, anyOf, oneOf, not,
// if/then/else, and the annotations ($schema, $id, $defs, $comment, title, description,
// default, examples).
#pragma once

#include <cstddef>
#include <expected>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::protocol {

// What part of the document a violation is about.
enum class SchemaTarget {
  value,    // the value at `pointer`
  key,      // the member name at `pointer` (an unknown field, a bad name)
  missing,  // `pointer` names an absent member; its parent object exists
  object,   // the object at `pointer` as a whole (e.g. none of several alternatives given)
};

struct SchemaViolation {
  std::string pointer;  // RFC 6901
  SchemaTarget target = SchemaTarget::value;
  std::string keyword;  // the keyword that failed: "type", "required", "additionalProperties", ...
  std::string message;  // e.g. "\"hots\" is not a known field (did you mean \"host\"?)"
  // The message can only quote a regular expression; a hand-written one for the same place
  // (ferry's own validator) reads better.
  bool quotes_pattern = false;
};

// Strings longer than this are not matched against a "pattern" (libstdc++'s std::regex recurses
// per character and overflows the stack near 30k); they are reported as too long instead.
// PATH_MAX: no path-like value is longer.
inline constexpr std::size_t kMaxPatternInput = 4096;

class JsonSchema {
 public:
  // Checks that `schema` uses only supported keywords, that its $refs resolve and its patterns
  // compile; the error says which one and where.
  static std::expected<JsonSchema, std::string> compile(nlohmann::json schema);

  // Every violation, at most one per (pointer, target): the most basic one (a wrong type before
  // a range, a range before a pattern). Empty when `instance` is valid. Thread-safe.
  std::vector<SchemaViolation> validate(const nlohmann::json& instance) const;

  const nlohmann::json& document() const;

 private:
  struct State;
  explicit JsonSchema(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

}  // namespace ferry::protocol

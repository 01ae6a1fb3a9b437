// Where each value of a JSON text sits: every JSON pointer ("/mappings/0/remote") mapped to the
// byte span of its value and of its member key, so a message about a value can underline exactly
// that value. protocol::parse_json_text (the depth-limited nlohmann parse every ferry reader uses,
// here with the same options as deploy::load_project: plain JSON, no comments) decides validity
// and the syntax error's place;
// the scanner below only records where things are.
#pragma once

#include <cstddef>
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::diagnostics {

struct ByteSpan {
  std::size_t begin = 0;
  std::size_t end = 0;  // exclusive
};

struct JsonNodeSpan {
  ByteSpan value;               // quotes and brackets included
  std::optional<ByteSpan> key;  // the member name with its quotes; none for the root and array items
};

// A key given twice in one object: nlohmann keeps the last value, so `key` is the earlier,
// ignored occurrence.
struct DuplicateKey {
  std::string pointer;
  ByteSpan key;
};

struct JsonSyntaxError;
struct LocatedJson;

// Keeps a tree (children by key or index), not a map of pointer strings, so memory stays linear
// in the text however deep or long-keyed it is.
class JsonLocations {
 public:
  // Tolerant: stops at the first thing that is not JSON and keeps what it saw before, so a
  // half-typed file still shows its top-level keys.
  static JsonLocations scan(std::string_view text);

  const JsonNodeSpan* find(std::string_view pointer) const;
  // The node at `pointer`, or its nearest recorded ancestor (exact says which); nullptr only when
  // nothing was recorded.
  const JsonNodeSpan* find_nearest(std::string_view pointer, bool& exact) const;
  // Members of the root object, sorted; empty when the root is not one.
  std::vector<std::string> top_level_keys() const;
  // Keys given twice (the first 100).
  const std::vector<DuplicateKey>& duplicates() const { return duplicates_; }
  bool complete() const { return complete_; }  // the whole text was one JSON value

 private:
  friend class JsonScanner;
  friend std::expected<LocatedJson, JsonSyntaxError> parse_located(std::string_view text);
  // The first scalar, in text order, spelled exactly `token`.
  std::optional<ByteSpan> first_scalar(std::string_view text, std::string_view token) const;
  struct Node {
    JsonNodeSpan span;
    std::map<std::string, std::size_t, std::less<>> members;  // objects: key -> node (the last one given)
    std::vector<std::size_t> items;                             // arrays
  };
  std::vector<Node> nodes_;  // [0] is the root
  std::vector<DuplicateKey> duplicates_;
  bool complete_ = false;
};

struct JsonSyntaxError {
  ByteSpan span;        // the offending character or token; empty at the end of the text
  std::string message;  // nlohmann's, without its line/column (ours are exact) and echo
};

struct LocatedJson {
  nlohmann::json value;
  JsonLocations locations;
};

// Parses as deploy::load_project does (plain JSON; a UTF-8 BOM is skipped; a repeated key keeps
// its last value; a NUL byte ends the input, whatever follows; nested at most
// protocol::kMaxJsonDepth levels, past that an error on the first bracket too deep) and locates
// every value.
std::expected<LocatedJson, JsonSyntaxError> parse_located(std::string_view text);

// Where a message about `pointer` goes. value: the value (a container spanning several lines is
// marked by its key, or its opening bracket, so one underline does not cover a block); key: the
// member name (the value for array items); members: the object as a whole, by its key or
// opening bracket. A pointer not in the text (a missing member) goes to its nearest ancestor as
// `members`.
enum class Mark { value, key, members };
ByteSpan mark_span(const JsonLocations& locations, std::string_view text, std::string_view pointer, Mark mark);

}  // namespace ferry::diagnostics

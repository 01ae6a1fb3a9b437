// The one way ferry parses JSON it did not write in this process, less its std::expected face
// (json_parse.hpp): nlohmann's parser behind a nesting limit. C++17 and header-only on purpose:
// ferry-train's box pack carries this file (helper/train/pack_trainer_sources.cmake) and the
// box's compiler may be g++ 9, so nothing here may need C++20.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::protocol {

// The nesting limit of every parse: messages on both wires (codec.hpp) and documents alike.
inline constexpr std::size_t kMaxJsonDepth = 256;

struct JsonParseOptions {
  bool ignore_comments = false;  // JSONC (.vscode files); ferry.json and configs are plain JSON
  std::size_t max_depth = kMaxJsonDepth;
};

enum class JsonParseErrorKind {
  syntax,        // not JSON
  too_deep,      // JSON, nested deeper than max_depth
  out_of_range,  // a number no double holds (1e400)
};

struct JsonParseError {
  JsonParseErrorKind kind = JsonParseErrorKind::syntax;
  // The problem without its place: nlohmann's words less its "[json.exception...] parse error at
  // line L, column C: " prefix ("syntax error while parsing value - ..."), or ours.
  std::string message;
  std::size_t offset = 0;  // byte offset of the byte the parser stopped on (text.size(): at the end)
  std::size_t line = 1, column = 1;  // 1-based, columns in bytes, of that byte
  std::string to_string() const {
    return message + " at line " + std::to_string(line) + ", column " + std::to_string(column);
  }
};

// Builds the document from nlohmann's SAX events, refusing to open a container past max_depth.
// Its own builder, not nlohmann::detail's, so no detail API ties it to one nlohmann version.
// Also the message codec's (codec.cpp), for JSON and CBOR bodies.
class DepthLimitedBuilder {
 public:
  using json = nlohmann::json;
  DepthLimitedBuilder(json& root, std::size_t max_depth) : root_(root), max_depth_(max_depth) {}

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(json::number_integer_t v) { return put(v); }
  bool number_unsigned(json::number_unsigned_t v) { return put(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return put(v); }
  bool string(json::string_t& v) { return put(std::move(v)); }
  bool binary(json::binary_t& v) { return put(json::binary_t(std::move(v))); }
  bool start_object(std::size_t) { return open(json::value_t::object); }
  bool key(json::string_t& k) {
    member_ = &(*stack_.back())[k];  // a repeated key keeps its last value, as nlohmann's parse does
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(json::value_t::array); }
  bool end_array() { return close(); }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string&, const Exception& e) {
    position_ = position;
    what_ = e.what();
    error_id_ = e.id;
    return false;
  }

  bool too_deep() const { return too_deep_; }
  const std::string& what() const { return what_; }  // nlohmann's exception text, when it failed
  int error_id() const { return error_id_; }            // nlohmann's exception id (406: number overflow)
  std::size_t position() const { return position_; }    // nlohmann's count of bytes read at the error

 private:
  template <class V>
  bool put(V&& v) {
    if (stack_.empty()) {
      root_ = json(std::forward<V>(v));
    } else if (stack_.back()->is_array()) {
      stack_.back()->emplace_back(std::forward<V>(v));
    } else {
      *member_ = json(std::forward<V>(v));
    }
    return true;
  }
  json* slot(json::value_t type) {
    if (stack_.empty()) return &(root_ = json(type));
    if (stack_.back()->is_array()) return &stack_.back()->emplace_back(type);
    return &(*member_ = json(type));
  }
  bool open(json::value_t type) {
    if (stack_.size() >= max_depth_) {
      too_deep_ = true;
      return false;
    }
    stack_.push_back(slot(type));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  json& root_;
  std::size_t max_depth_;
  std::vector<json*> stack_;
  json* member_ = nullptr;
  bool too_deep_ = false;
  std::string what_;
  int error_id_ = 0;
  std::size_t position_ = 0;
};

namespace json_parse_detail {

// Where the first container past max_depth opens, for the error's place. Only called after the
// builder stopped there, so everything before it is well-formed JSON: strings (and comments,
// when allowed) are all this walk has to step over.
inline std::size_t too_deep_offset(std::string_view text, std::size_t max_depth, bool comments) {
  std::size_t depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
    } else if (comments && c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (comments && c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const std::size_t end = text.find("*/", i + 2);
      if (end == std::string_view::npos) break;
      i = end + 1;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;
    }
  }
  return text.size();
}

// "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error ..." ->
// "syntax error ...": the place is the error's own fields.
inline std::string strip_nlohmann_prefix(std::string what) {
  if (what.compare(0, 16, "[json.exception.") == 0) {
    if (const auto end = what.find("] "); end != std::string::npos) what.erase(0, end + 2);
  }
  if (what.compare(0, 11, "parse error") == 0) {
    if (const auto colon = what.find(": "); colon != std::string::npos) what.erase(0, colon + 2);
  }
  return what;
}

inline JsonParseError located(JsonParseErrorKind kind, std::string message, std::string_view text, std::size_t offset) {
  JsonParseError e{kind, std::move(message), std::min(offset, text.size()), 1, 1};
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < e.offset; ++i)
    if (text[i] == '\n') {
      ++e.line;
      line_start = i + 1;
    }
  e.column = e.offset - line_start + 1;
  return e;
}

}  // namespace json_parse_detail

// Parses `text` as one JSON value into `out` (plain JSON unless options.ignore_comments; a UTF-8
// BOM is skipped; a NUL byte ends the input, as in nlohmann's own parse): nothing when it parsed,
// else why not, with `out` untouched. Never throws for bad input.
inline std::optional<JsonParseError> parse_json_into(std::string_view text, nlohmann::json& out, JsonParseOptions options = {}) {
  namespace d = json_parse_detail;
  nlohmann::json root;
  DepthLimitedBuilder builder(root, options.max_depth);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(text.begin(), text.end(), &builder, nlohmann::json::input_format_t::json,
                                   /*strict=*/true, options.ignore_comments);
  } catch (const nlohmann::json::exception& e) {  // out of memory aside, nothing should throw here
    return d::located(JsonParseErrorKind::syntax, d::strip_nlohmann_prefix(e.what()), text, 0);
  }
  if (ok) {
    out = std::move(root);
    return std::nullopt;
  }
  if (builder.too_deep())
    return d::located(JsonParseErrorKind::too_deep, "nested deeper than " + std::to_string(options.max_depth) + " levels", text,
                      d::too_deep_offset(text, options.max_depth, options.ignore_comments));
  // nlohmann counts the byte it stopped on among those read.
  const std::size_t at = builder.position() > 0 ? builder.position() - 1 : 0;
  return d::located(builder.error_id() == 406 ? JsonParseErrorKind::out_of_range : JsonParseErrorKind::syntax,
                    d::strip_nlohmann_prefix(builder.what()), text, at);
}

}  // namespace ferry::protocol

// Fuzzes ferry.json's way from bytes to a config, as an untrusted project's file takes it: the
// depth-limited parse (protocol/json_parse.hpp), deploy::parse_project on what it accepts, and the
// config diagnostics over the same text. Nothing may crash, hang or overflow the stack, however
// deep the nesting. The parse must agree with nlohmann's own on everything within the limit, never
// hand out a document nested past it, and place its errors inside the text (line and column
// matching the offset); the diagnostics must say what the parse said: a refused text is exactly one
// "json" error, "nested deeper than 256 levels" when that was the reason.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "helper/deploy/project_config.hpp"
#include "helper/diagnostics/config_diagnostics.hpp"
#include "protocol/json_parse.hpp"
#include "protocol/json_schema.hpp"

using ferry::protocol::JsonParseErrorKind;
using nlohmann::json;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

// Walked with a stack of its own: the point is that nothing here recurses per level.
std::size_t depth_of(const json& doc) {
  std::size_t deepest = 0;
  std::vector<std::pair<const json*, std::size_t>> todo{{&doc, 1}};
  while (!todo.empty()) {
    auto [j, d] = todo.back();
    todo.pop_back();
    if (!j->is_structured()) continue;
    deepest = std::max(deepest, d);
    for (const auto& child : *j) todo.push_back({&child, d + 1});
  }
  return deepest;
}

// parse_project runs std::regex over names and paths, whose stack use grows with the string; the
// diagnostics skip it for such strings (the schema reports them), and so does this harness.
bool has_huge_string(const json& doc) {
  std::vector<const json*> todo{&doc};
  while (!todo.empty()) {
    const json* j = todo.back();
    todo.pop_back();
    if (j->is_string() && j->get_ref<const std::string&>().size() > ferry::protocol::kMaxPatternInput) return true;
    if (j->is_object())
      for (const auto& [k, v] : j->items()) {
        if (k.size() > ferry::protocol::kMaxPatternInput) return true;
        todo.push_back(&v);
      }
    if (j->is_array())
      for (const auto& v : *j) todo.push_back(&v);
  }
  return false;
}

void check_error(std::string_view text, const ferry::protocol::JsonParseError& e) {
  require(!e.message.empty() && e.offset <= text.size());
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < e.offset; ++i) {
    if (text[i] == '\n') ++line, column = 1;
    else ++column;
  }
  require(e.line == line && e.column == column);
  if (e.kind == JsonParseErrorKind::too_deep)
    require(e.offset < text.size() && (text[e.offset] == '[' || text[e.offset] == '{'));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 65536) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto parsed = ferry::protocol::parse_json_text(text);
  if (parsed) {
    require(depth_of(*parsed) <= ferry::protocol::kMaxJsonDepth);
    // Within the limit it is nlohmann's parse, value for value (its own parse is iterative too).
    const json theirs = json::parse(text, nullptr, /*allow_exceptions=*/false);
    require(!theirs.is_discarded() && theirs == *parsed);
    if (parsed->is_object() && !has_huge_string(*parsed)) {
      auto config = ferry::deploy::parse_project(*parsed, "/tmp/ferry-fuzz");
      if (config) require(!ferry::deploy::to_json(*config).dump().empty());
      else require(config.error().pointer.empty() || config.error().pointer.starts_with("/"));
    }
  } else {
    check_error(text, parsed.error());
  }

  ferry::diagnostics::ProjectFileContext no_files{{"fuzzer", "/nonexistent"}, false};
  const auto diagnostics = ferry::diagnostics::diagnose_project_file(text, "/tmp/ferry-fuzz/ferry.json", no_files);
  require(diagnostics.size() <= ferry::diagnostics::kMaxDiagnostics);
  for (const auto& d : diagnostics) require(!(d.range.end < d.range.start));
  if (!parsed) {
    require(diagnostics.size() == 1 && diagnostics[0].code == "json" &&
            diagnostics[0].severity == ferry::diagnostics::Severity::error);
    if (parsed.error().kind == JsonParseErrorKind::too_deep)
      require(diagnostics[0].message == "nested deeper than 256 levels");
  }
  return 0;
}

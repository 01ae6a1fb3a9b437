// Fuzzes the JSON locator and the config diagnostics built on it: any text an editor sends
// (half-typed, binary, deeply nested) must not crash, hang or read out of bounds. When nlohmann
// accepts the text, every value it parsed must be located, and the located span must re-parse to
// that very value (and a member's key span to its name); when it refuses, the error span lies in
// the text. Diagnostics run too (ferry.json without reading any ssh config), with ranges that
// never run backwards.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "helper/diagnostics/config_diagnostics.hpp"
#include "helper/diagnostics/json_locator.hpp"
#include "helper/diagnostics/line_index.hpp"

using namespace ferry::diagnostics;
using nlohmann::json;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

std::string_view slice(std::string_view text, ByteSpan s) {
  require(s.begin <= s.end && s.end <= text.size());
  return text.substr(s.begin, s.end - s.begin);
}

std::string escape_token(const std::string& token) {
  std::string out;
  for (char c : token) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

// Every value nlohmann parsed (the first 2000, 64 deep) is located where it is in the text.
void check_located(std::string_view text, const LocatedJson& located) {
  require(located.locations.complete());
  struct Item {
    const json* value;
    std::string pointer;
    std::string key;
    bool member;
    int depth;
  };
  std::vector<Item> todo{{&located.value, "", "", false, 0}};
  for (int seen = 0; !todo.empty() && seen < 2000; ++seen) {
    Item item = std::move(todo.back());
    todo.pop_back();
    const JsonNodeSpan* node = located.locations.find(item.pointer);
    require(node != nullptr);
    json again = json::parse(slice(text, node->value), nullptr, false);
    require(!again.is_discarded() && again == *item.value);
    require(node->key.has_value() == item.member);
    if (item.member) require(json::parse(slice(text, *node->key), nullptr, false) == json(item.key));
    if (item.depth >= 64) continue;
    if (item.value->is_object())
      for (const auto& [k, v] : item.value->items())
        todo.push_back({&v, item.pointer + "/" + escape_token(k), k, true, item.depth + 1});
    if (item.value->is_array())
      for (std::size_t i = 0; i < item.value->size(); ++i)
        todo.push_back({&(*item.value)[i], item.pointer + "/" + std::to_string(i), "", false, item.depth + 1});
  }
}

void check_ranges(const std::vector<Diagnostic>& diagnostics) {
  require(diagnostics.size() <= kMaxDiagnostics);
  for (const auto& d : diagnostics) require(!(d.range.end < d.range.start));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 16384) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto located = parse_located(text);
  if (located) {
    check_located(text, *located);
  } else {
    slice(text, located.error().span);
    require(!located.error().message.empty());
  }
  (void)JsonLocations::scan(text).top_level_keys();

  LineIndex lines(text);
  for (std::size_t i = 0; i <= size; i += 1 + size / 16) {
    auto p = lines.position(i);
    require(p.line >= 0 && p.character >= 0 && p.character <= static_cast<int>(i));
  }

  (void)looks_like_train_config(text);
  check_ranges(diagnose_train_config(text));
  ProjectFileContext no_files{{"fuzzer", "/nonexistent"}, false};
  check_ranges(diagnose_project_file(text, "/tmp/ferry-fuzz/ferry.json", no_files));
  return 0;
}

// Setting one key in a JSONC settings file: see settings_key.hpp.
#include "helper/ide/settings_key.hpp"

#include <nlohmann/json.hpp>

#include "protocol/json_parse.hpp"

namespace ferry::ide {

namespace {

// Where the top-level object's '{' is, skipping comments before it.
std::size_t object_start(std::string_view t) {
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t.compare(i, 2, "//") == 0) {
      i = t.find_first_of("\r\n", i);  // a line comment ends at either, as in the JSON parser
      if (i == std::string_view::npos) return i;
    } else if (t.compare(i, 2, "/*") == 0) {
      i = t.find("*/", i + 2);
      if (i == std::string_view::npos) return i;
      ++i;
    } else if (t[i] == '{') {
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::expected<SettingsKeyMerge, std::string> merge_settings_key(std::string_view existing, const std::string& key,
                                                                const std::string& value) {
  const nlohmann::json entry_key = key, entry_value = value;
  SettingsKeyMerge out;
  if (existing.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    out.text = "{\n  " + entry_key.dump() + ": " + entry_value.dump() + "\n}\n";
    out.changed = true;
    return out;
  }
  // nlohmann's parser stops at a NUL as at the end of the text, so a NUL would hide what follows
  // it from the check and the '{' found below could be past it: no settings file has one.
  if (existing.find('\0') != std::string_view::npos)
    return std::unexpected("it contains a NUL byte, which no settings file has; fix it or set \"" + key + "\" yourself");
  const nlohmann::json unreadable(nlohmann::json::value_t::discarded);
  auto parsed = protocol::parse_json_text(existing, {.ignore_comments = true}).value_or(unreadable);
  if (parsed.is_discarded()) {
    // VS Code also allows trailing commas, which nlohmann does not: drop them and try again.
    std::string relaxed(existing);
    for (std::size_t i = relaxed.find(','); i != std::string::npos; i = relaxed.find(',', i + 1)) {
      const std::size_t next = relaxed.find_first_not_of(" \t\r\n", i + 1);
      if (next != std::string::npos && (relaxed[next] == '}' || relaxed[next] == ']')) relaxed[i] = ' ';
    }
    parsed = protocol::parse_json_text(relaxed, {.ignore_comments = true}).value_or(unreadable);
  }
  if (parsed.is_discarded() || !parsed.is_object())
    return std::unexpected("not a JSON object (with comments) that ferry can read; fix it or set \"" + key + "\" yourself");
  out.text = std::string(existing);
  if (auto it = parsed.find(key); it != parsed.end()) {
    if (!(*it == entry_value)) out.kept_value = it->dump();
    return out;
  }
  const std::size_t brace = object_start(existing);
  if (brace == std::string_view::npos) return std::unexpected(std::string("no '{' found"));
  const std::string line = "\n  " + entry_key.dump() + ": " + entry_value.dump() + (parsed.empty() ? "" : ",");
  out.text.insert(brace + 1, line);
  out.changed = true;
  return out;
}

}  // namespace ferry::ide

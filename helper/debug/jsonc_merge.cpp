// jsonc_merge: text edits on a JSON-with-comments document. The text is first "neutralized"
// (comments and trailing commas overwritten by spaces, newlines kept), so it parses as JSON and its
// offsets are the original's; spans found there are then edited in the original text.
#include "helper/debug/jsonc_merge.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

#include "protocol/json_parse.hpp"

namespace ferry::debug {

namespace {

using ojson = nlohmann::ordered_json;
using nlohmann::json;

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// One past the closing quote of the string starting at `i` (its opening quote).
std::size_t string_end(std::string_view t, std::size_t i) {
  for (++i; i < t.size(); ++i) {
    if (t[i] == '\\') ++i;
    else if (t[i] == '"') return i + 1;
  }
  return t.size();
}

struct Neutralized {
  std::string text;
  std::vector<std::size_t> trailing_commas;  // where the original has a ',' before a ']' or '}'
};

std::optional<Neutralized> neutralize(std::string_view original) {
  Neutralized n{std::string(original), {}};
  std::string& t = n.text;
  constexpr std::size_t kNone = std::string::npos;
  std::size_t comma = kNone;  // a ',' with nothing but blanks and comments after it yet
  char last = 0;               // the last character outside strings, comments and blanks
  for (std::size_t i = 0; i < t.size();) {
    const char c = t[i];
    if (c == '"') {
      i = string_end(t, i);
      comma = kNone;
      last = c;
    } else if (c == '/' && i + 1 < t.size() && (t[i + 1] == '/' || t[i + 1] == '*')) {
      const bool line = t[i + 1] == '/';
      const std::size_t end = line ? t.find('\n', i) : t.find("*/", i + 2);
      if (!line && end == std::string::npos) return std::nullopt;  // unterminated /* comment
      const std::size_t stop = end == std::string::npos ? t.size() : line ? end : end + 2;
      for (; i < stop; ++i)
        if (t[i] != '\n') t[i] = ' ';
    } else if (c == ',') {
      // Only a comma after a value can be a trailing one: "[,]" and "{,}" stay invalid.
      comma = last == 0 || std::string_view("{[,:").find(last) != std::string_view::npos ? kNone : i;
      last = c;
      ++i;
    } else if (c == ']' || c == '}') {
      if (comma != kNone) {
        t[comma] = ' ';
        n.trailing_commas.push_back(comma);
      }
      comma = kNone;
      last = c;
      ++i;
    } else {
      if (!blank(c)) comma = kNone, last = c;
      ++i;
    }
  }
  return n;
}

std::size_t skip_blanks(std::string_view t, std::size_t i) {
  while (i < t.size() && blank(t[i])) ++i;
  return i;
}

// One past the end of the (well-formed) value starting at `i`.
std::size_t value_end(std::string_view t, std::size_t i) {
  if (t[i] == '"') return string_end(t, i);
  if (t[i] != '{' && t[i] != '[') {
    while (i < t.size() && !blank(t[i]) && t[i] != ',' && t[i] != ']' && t[i] != '}') ++i;
    return i;
  }
  int depth = 0;
  for (; i < t.size(); ++i) {
    if (t[i] == '"') {
      i = string_end(t, i) - 1;
    } else if (t[i] == '{' || t[i] == '[') {
      ++depth;
    } else if ((t[i] == '}' || t[i] == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return t.size();
}

struct Span {
  std::size_t begin = 0, end = 0;
};

// A container's items (array elements, or object members with their keys) and its closing bracket.
struct Items {
  std::vector<Span> spans;          // elements; for objects, the whole "key": value
  std::vector<std::string> keys;    // objects only
  std::vector<Span> values;         // objects only
  std::size_t close = 0;
};

Items items_of(std::string_view t, std::size_t open) {
  Items out;
  const bool object = t[open] == '{';
  std::size_t i = skip_blanks(t, open + 1);
  while (i < t.size() && t[i] != (object ? '}' : ']')) {
    Span item{i, 0};
    if (object) {
      const std::size_t key_end = string_end(t, i);
      const auto key = protocol::parse_json_text(t.substr(i, key_end - i));
      out.keys.push_back(key && key->is_string() ? key->get<std::string>() : std::string());
      i = skip_blanks(t, skip_blanks(t, key_end) + 1);  // past ':'
      out.values.push_back({i, value_end(t, i)});
      i = out.values.back().end;
    } else {
      i = value_end(t, i);
    }
    item.end = i;
    out.spans.push_back(item);
    i = skip_blanks(t, i);
    if (i < t.size() && t[i] == ',') i = skip_blanks(t, i + 1);
  }
  out.close = i;
  return out;
}

// The blanks a line starts with, for the line holding `pos`.
std::string line_indent(std::string_view t, std::size_t pos) {
  std::size_t start = t.rfind('\n', pos == 0 ? 0 : pos - 1);
  start = start == std::string_view::npos || pos == 0 ? 0 : start + 1;
  std::size_t end = start;
  while (end < t.size() && (t[end] == ' ' || t[end] == '\t')) ++end;
  return std::string(t.substr(start, end - start));
}

// The file's indent step, from its first top-level member; VS Code's 4 spaces when it shows none.
std::string indent_unit(std::string_view t, const Items& top) {
  if (top.spans.empty()) return "    ";
  const std::string first = line_indent(t, top.spans.front().begin);
  const std::string outer = line_indent(t, top.close);
  if (first.size() > outer.size() && first.starts_with(outer)) return first.substr(outer.size());
  return "    ";
}

std::string format(const ojson& v, const std::string& unit, const std::string& base) {
  const std::string dumped = unit == "\t" ? v.dump(1, '\t', false, json::error_handler_t::replace)
                                          : v.dump(static_cast<int>(unit.size()), ' ', false, json::error_handler_t::replace);
  std::string out;
  for (char c : dumped) {
    out += c;
    if (c == '\n') out += base;
  }
  return out;
}

struct Edit {
  std::size_t pos = 0, len = 0;
  std::string text;
};

// Appends `texts` (already formatted) after a container's last item, or into an empty one:
// a comma after the last item unless it has a trailing one, then each text on its own line,
// placed after any comment that follows the last item.
void append_items(std::string_view original, const Neutralized& n, std::size_t open, const Items& items,
                  const std::vector<std::string>& texts, const std::string& item_indent, const std::string& outer_indent,
                  std::vector<Edit>& edits) {
  if (texts.empty()) return;
  std::size_t after = items.close;
  while (after > open + 1 && blank(original[after - 1])) --after;  // end of the last item or comment
  const bool has_items = !items.spans.empty();
  const std::size_t last_end = has_items ? items.spans.back().end : open + 1;
  const bool trailing = std::any_of(n.trailing_commas.begin(), n.trailing_commas.end(),
                                    [&](std::size_t c) { return c >= last_end && c < items.close; });
  const bool comma_first = has_items && !trailing && after == last_end;
  // Built by appending: `"\n" + string` trips GCC 12's -Wrestrict false positive.
  std::string insert(comma_first ? "," : "");
  for (std::size_t i = 0; i < texts.size(); ++i) insert.append(i ? ",\n" : "\n").append(item_indent).append(texts[i]);
  if (trailing) insert += ",";
  // A closing bracket on the same line as the insertion point gets its own line.
  if (original.substr(after, items.close - after).find('\n') == std::string_view::npos) insert.append("\n").append(outer_indent);
  if (has_items && !trailing && !comma_first) edits.push_back({last_end, 0, ","});
  edits.push_back({after, 0, std::move(insert)});
}

std::string apply(std::string_view original, std::vector<Edit> edits) {
  std::stable_sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.pos > b.pos; });
  std::string out(original);
  for (const auto& e : edits) out.replace(e.pos, e.len, e.text);
  return out;
}

std::string name_of(const ojson& entry, const std::string& key) {
  auto it = entry.find(key);
  return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
}

JsoncMerge new_file(const JsoncMergeRequest& r) {
  JsoncMerge out;
  ojson doc = r.skeleton.is_object() ? r.skeleton : ojson::object();
  doc[r.array_key] = ojson::array();
  for (const auto& e : r.entries) {
    doc[r.array_key].push_back(e);
    out.added.push_back(name_of(e, r.name_key));
  }
  out.text = doc.dump(4, ' ', false, json::error_handler_t::replace) + "\n";
  return out;
}

// The original text and its neutralized twin (same offsets).
struct Document {
  std::string_view original;
  const Neutralized& n;
};

// The entries into the existing array at `arr`: each replaces the first element of its name
// where it stands (unless equal already), the others are appended.
void merge_array(const Document& d, const Span& arr, const JsoncMergeRequest& r, const std::string& unit, JsoncMerge& out,
                 std::vector<Edit>& edits) {
  const std::string& t = d.n.text;
  const Items elements = items_of(t, arr.begin);
  std::vector<bool> placed(r.entries.size(), false);
  for (const Span& s : elements.spans) {
    const json old = protocol::parse_json_text(t.substr(s.begin, s.end - s.begin)).value_or(json());
    const std::string name = old.is_object() && old.contains(r.name_key) && old[r.name_key].is_string()
                                 ? old[r.name_key].get<std::string>() : std::string();
    if (name.empty()) continue;
    out.existing_names.push_back(name);
    for (std::size_t k = 0; k < r.entries.size(); ++k) {
      if (placed[k] || name_of(r.entries[k], r.name_key) != name) continue;
      placed[k] = true;
      if (old == json(r.entries[k])) {
        out.unchanged.push_back(name);
      } else {
        edits.push_back({s.begin, s.end - s.begin, format(r.entries[k], unit, line_indent(d.original, s.begin))});
        out.replaced.push_back(name);
      }
      break;
    }
  }
  const std::string item_indent = elements.spans.empty() ? line_indent(d.original, arr.begin) + unit
                                                         : line_indent(d.original, elements.spans.back().begin);
  std::vector<std::string> texts;
  for (std::size_t k = 0; k < r.entries.size(); ++k) {
    if (placed[k]) continue;
    texts.push_back(format(r.entries[k], unit, item_indent));
    out.added.push_back(name_of(r.entries[k], r.name_key));
  }
  append_items(d.original, d.n, arr.begin, elements, texts, item_indent, line_indent(d.original, elements.close), edits);
}

}  // namespace

std::expected<JsoncMerge, std::string> merge_named_entries(std::string_view existing, const JsoncMergeRequest& r) {
  for (const auto& e : r.entries)
    if (!e.is_object() || name_of(e, r.name_key).empty())
      return std::unexpected("an entry to merge has no \"" + r.name_key + "\"");
  if (existing.find_first_not_of(" \t\r\n") == std::string_view::npos) return new_file(r);

  const auto n = neutralize(existing);
  // Depth-limited like every parse: what parses here is compared and copied recursively.
  const json doc = n ? protocol::parse_json_text(n->text).value_or(json(json::value_t::discarded)) : json(json::value_t::discarded);
  if (doc.is_discarded()) return std::unexpected("it is not JSON (with comments) that ferry can read; it was left as it is");
  if (!doc.is_object()) return std::unexpected("it does not hold a JSON object; it was left as it is");
  if (doc.contains(r.array_key) && !doc[r.array_key].is_array())
    return std::unexpected("its \"" + r.array_key + "\" is not an array; it was left as it is");

  const Document d{existing, *n};
  const std::size_t top_open = skip_blanks(n->text, n->text.starts_with("\xEF\xBB\xBF") ? 3 : 0);  // after a BOM
  const Items top = items_of(n->text, top_open);
  const std::string unit = indent_unit(existing, top);
  JsoncMerge out;
  std::vector<Edit> edits;
  // With a key given twice the parser keeps the last one, so that is the one edited.
  const auto last = std::find(top.keys.rbegin(), top.keys.rend(), r.array_key);
  const bool has_array = last != top.keys.rend();
  if (has_array) merge_array(d, top.values[static_cast<std::size_t>(top.keys.rend() - last - 1)], r, unit, out, edits);

  // Top-level keys the file lacks: the skeleton's, then the array itself.
  std::vector<std::string> members;
  const std::string member_indent =
      top.spans.empty() ? line_indent(existing, top_open) + unit : line_indent(existing, top.spans.back().begin);
  if (r.skeleton.is_object())
    for (const auto& [key, value] : r.skeleton.items())
      if (!doc.contains(key)) members.push_back(json(key).dump() + ": " + format(value, unit, member_indent));
  if (!has_array) {
    ojson arr = ojson::array();
    for (const auto& e : r.entries) {
      arr.push_back(e);
      out.added.push_back(name_of(e, r.name_key));
    }
    members.push_back(json(r.array_key).dump() + ": " + format(arr, unit, member_indent));
  }
  append_items(existing, *n, top_open, top, members, member_indent, line_indent(existing, top.close), edits);
  out.text = apply(existing, std::move(edits));
  return out;
}

}  // namespace ferry::debug

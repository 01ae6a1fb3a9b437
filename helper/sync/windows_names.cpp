// Names Windows cannot hold: see windows_names.hpp.
#include "helper/sync/windows_names.hpp"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

namespace ferry::sync {

namespace {

// One UTF-8 sequence at s[i]: its code point, i moved past it; nothing (i moved by one byte) for
// a byte that does not start a well-formed sequence (overlong forms, surrogates and code points
// past U+10FFFF are not well-formed).
std::optional<char32_t> next_code_point(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  std::size_t len = 0;
  char32_t cp = 0, min = 0;
  if ((b0 & 0xE0) == 0xC0) len = 2, cp = b0 & 0x1F, min = 0x80;
  else if ((b0 & 0xF0) == 0xE0) len = 3, cp = b0 & 0x0F, min = 0x800;
  else if ((b0 & 0xF8) == 0xF0) len = 4, cp = b0 & 0x07, min = 0x10000;
  if (len == 0 || i + len > s.size()) {
    ++i;
    return std::nullopt;
  }
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return std::nullopt;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++i;
    return std::nullopt;
  }
  i += len;
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// In [from, to], the upper case of a pair whose lower case is at the odd (or even) offset.
bool paired(char32_t cp, char32_t from, char32_t to, bool lower_is_odd) {
  return cp >= from && cp <= to && ((cp & 1) != 0) == lower_is_odd;
}

// Unicode's simple upper case (UnicodeData.txt field 12) for the blocks fold_case covers.
char32_t simple_upper(char32_t cp) {
  if (cp >= 'a' && cp <= 'z') return cp - 32;
  if (cp < 0xB5) return cp;
  if (cp == 0xB5) return 0x39C;                                   // micro sign -> Greek capital mu
  if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) return cp - 32;     // à..þ
  if (cp == 0xFF) return 0x178;                                   // ÿ
  if (paired(cp, 0x100, 0x12F, true) || paired(cp, 0x132, 0x137, true) || paired(cp, 0x139, 0x148, false) ||
      paired(cp, 0x14A, 0x177, true) || paired(cp, 0x179, 0x17E, false))
    return cp - 1;
  if (cp == 0x131) return 'I';                                    // dotless i
  if (cp == 0x17F) return 'S';                                    // long s
  if (cp == 0x3AC) return 0x386;
  if (cp >= 0x3AD && cp <= 0x3AF) return cp - 37;
  if (cp == 0x3C2) return 0x3A3;                                  // final sigma
  if (cp >= 0x3B1 && cp <= 0x3CB) return cp - 32;
  if (cp == 0x3CC) return 0x38C;
  if (cp == 0x3CD || cp == 0x3CE) return cp - 63;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  if (paired(cp, 0x460, 0x481, true) || paired(cp, 0x48A, 0x4BF, true) || paired(cp, 0x4C1, 0x4CE, false) ||
      paired(cp, 0x4D0, 0x52F, true))
    return cp - 1;
  if (cp == 0x4CF) return 0x4C0;
  return cp;
}

// The name as a message shows it: control characters and bytes that are not UTF-8 as \xNN.
std::string shown(std::string_view name) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < name.size();) {
    const std::size_t at = i;
    const auto cp = next_code_point(name, i);
    if (cp && *cp >= 0x20 && *cp != 0x7F) {
      out.append(name.substr(at, i - at));
      continue;
    }
    const auto b = static_cast<unsigned char>(name[at]);
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

// "CON", "COM1", "LPT²": the device the name's stem (before the first dot, spaces dropped)
// names, upper-cased; "" for none.
std::string device_name(std::string_view name) {
  std::string_view stem = name.substr(0, name.find('.'));
  while (!stem.empty() && stem.back() == ' ') stem.remove_suffix(1);
  std::string up(stem);
  for (char& c : up)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  static constexpr std::array<std::string_view, 6> kPlain{"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"};
  if (std::ranges::find(kPlain, std::string_view(up)) != kPlain.end()) return up;
  const bool com_or_lpt = up.starts_with("COM") || up.starts_with("LPT");
  if (com_or_lpt && up.size() == 4 && up[3] >= '0' && up[3] <= '9') return up;
  // Superscript one, two and three: U+00B9, U+00B2, U+00B3.
  if (com_or_lpt && up.size() == 5 && up[3] == '\xc2' && (up[4] == '\xb9' || up[4] == '\xb2' || up[4] == '\xb3')) return up;
  return {};
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += "'" + shown(names[i]) + "'";
  }
  return out;
}

}  // namespace

std::optional<std::string> windows_name_problem(std::string_view name) {
  const std::string who = "'" + shown(name) + "': ";
  if (name.empty()) return who + "an empty name";
  if (name == "." || name == "..") return who + "not a name a file can have";
  for (std::size_t i = 0; i < name.size();)
    if (!next_code_point(name, i))
      return who + "not UTF-8, and Windows names are Unicode: it could only be written changed";
  for (const char c : name) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      return who + "Windows does not allow control character 0x" + kHex[b >> 4] + kHex[b & 15] + " in a name";
    }
    if (std::string_view("<>:\"/\\|?*").find(c) != std::string_view::npos)
      return who + "Windows does not allow '" + c + "' in a name";
  }
  if (auto device = device_name(name); !device.empty())
    return who + device + " is a device name on Windows" + (name.find('.') != std::string_view::npos ? " (with any extension too)" : "");
  if (name.back() == '.') return who + "Windows drops a trailing dot from a name";
  if (name.back() == ' ') return who + "Windows drops a trailing space from a name";
  return std::nullopt;
}

std::string fold_case(std::string_view utf8) {
  std::string out;
  out.reserve(utf8.size());
  for (std::size_t i = 0; i < utf8.size();) {
    const std::size_t at = i;
    const auto cp = next_code_point(utf8, i);
    if (cp) append_utf8(out, simple_upper(*cp));
    else out.append(utf8.substr(at, i - at));
  }
  return out;
}

std::vector<std::vector<std::string>> case_clashes(std::span<const std::string> rel_paths) {
  // Every path and every folder above it, once (a folder shared by many paths is met once: the
  // walk up stops at the first one already seen).
  std::unordered_set<std::string_view> seen;
  for (const std::string& p : rel_paths) {
    std::string_view v = p;
    while (!v.empty() && seen.insert(v).second) {
      const auto slash = v.rfind('/');
      if (slash == std::string_view::npos) break;
      v = v.substr(0, slash);
    }
  }
  std::unordered_map<std::string, std::vector<std::string_view>> by_fold;
  for (std::string_view v : seen) by_fold[fold_case(v)].push_back(v);
  std::vector<std::vector<std::string>> out;
  for (auto& [folded, group] : by_fold) {
    if (group.size() < 2) continue;
    // Spellings whose folders all differ clash because their folders do: that group is reported.
    std::unordered_set<std::string_view> parents;
    for (std::string_view v : group) {
      const auto slash = v.rfind('/');
      parents.insert(slash == std::string_view::npos ? std::string_view() : v.substr(0, slash));
    }
    if (parents.size() == group.size()) continue;
    std::vector<std::string> names(group.begin(), group.end());
    std::ranges::sort(names);
    out.push_back(std::move(names));
  }
  std::ranges::sort(out);
  return out;
}

std::map<std::string, std::string> windows_path_problems(std::span<const std::string> rel_paths) {
  const auto clashes = case_clashes(rel_paths);
  std::unordered_map<std::string_view, std::string> clash_reason;  // keys: views into `clashes`
  for (const auto& group : clashes)
    for (const auto& member : group)
      clash_reason[member] = quoted_list(group) + " differ only in case: on Windows they are one name";
  std::map<std::string, std::string> out;
  for (const std::string& p : rel_paths) {
    const std::string_view path = p;
    if (path.empty()) continue;  // the mapping's own folder: not a name
    for (std::size_t start = 0;;) {
      const auto slash = path.find('/', start);
      const std::size_t end = slash == std::string_view::npos ? path.size() : slash;
      const std::string_view prefix = path.substr(0, end);
      std::optional<std::string> why = windows_name_problem(path.substr(start, end - start));
      if (!why)
        if (auto it = clash_reason.find(prefix); it != clash_reason.end()) why = it->second;
      if (why) {
        out[p] = end == path.size() ? std::move(*why) : "in '" + shown(prefix) + "': " + *why;
        break;
      }
      if (slash == std::string_view::npos) break;
      start = slash + 1;
    }
  }
  return out;
}

}  // namespace ferry::sync

// Quick accepts for ferry.json's patterns: see config_patterns.hpp.
#include "helper/deploy/config_patterns.hpp"

#include <algorithm>

#include "helper/deploy/host_spec.hpp"

namespace ferry::deploy {

namespace {

bool alnum(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool name_char(char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; }
bool word_char(char c) { return alnum(c) || c == '_'; }
// Printable ASCII but the space: never \s, never a line end, one byte one character.
bool graph(char c) { return c > ' ' && c < 0x7f; }

bool all(std::string_view s, bool (*ok)(char)) { return std::all_of(s.begin(), s.end(), ok); }

// A path of printable ASCII with no ".." component (the patterns' last lookahead).
bool plain_path(std::string_view s) {
  if (!all(s, graph)) return false;
  for (std::size_t at = 0; at <= s.size();) {
    const std::size_t end = std::min(s.find('/', at), s.size());
    if (s.substr(at, end - at) == "..") return false;
    at = end + 1;
  }
  return true;
}

// [A-Za-z0-9_][A-Za-z0-9._-]*: an ssh alias or a host name, or the user before '@'.
bool host_word(std::string_view s) { return !s.empty() && word_char(s.front()) && all(s.substr(1), name_char); }

}  // namespace

bool quick_accept(std::string_view s, const char* pattern) {
  if (pattern == kEnvNamePattern) return !s.empty() && !(s.front() >= '0' && s.front() <= '9') && all(s, word_char);
  if (pattern == kTunnelNamePattern) return !s.empty() && s.size() <= 64 && all(s, name_char);
  if (pattern == kNamePattern) return !s.empty() && s.size() <= 100 && s != "." && s != ".." && all(s, name_char);
  if (pattern == kLocalPathPattern) return !s.empty() && s.front() != '/' && plain_path(s);
  if (pattern == kRemotePathPattern) return (s == "~" || s.starts_with("/") || s.starts_with("~/")) && plain_path(s);
  if (pattern == kHostPattern) {
    const auto at = s.find('@');
    return at == std::string_view::npos ? host_word(s) : host_word(s.substr(0, at)) && host_word(s.substr(at + 1));
  }
  return false;
}

}  // namespace ferry::deploy

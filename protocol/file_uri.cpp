// file:// URI <-> path: see file_uri.hpp.
#include "protocol/file_uri.hpp"

#include <cctype>

namespace ferry::protocol {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

}  // namespace

std::expected<std::string, std::string> file_uri_to_path(std::string_view uri) {
  if (!starts_with_nocase(uri, "file://")) return std::unexpected("not a file:// URI: " + std::string(uri.substr(0, 80)));
  std::string_view rest = uri.substr(7);
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return std::unexpected("a file URI needs an absolute path");
  std::string_view authority = rest.substr(0, slash);
  if (!authority.empty() && authority != "localhost")
    return std::unexpected("file URI names another host (" + std::string(authority.substr(0, 80)) + ")");
  std::string_view path = rest.substr(slash);
  // A query or fragment is not part of the file's name.
  if (auto end = path.find_first_of("?#"); end != std::string_view::npos) path = path.substr(0, end);
  std::string out;
  out.reserve(path.size());
  for (std::size_t i = 0; i < path.size(); ++i) {
    char c = path[i];
    if (c == '%') {
      if (i + 2 >= path.size()) return std::unexpected("truncated %-escape in a file URI");
      int hi = hex_value(path[i + 1]), lo = hex_value(path[i + 2]);
      if (hi < 0 || lo < 0) return std::unexpected("bad %-escape in a file URI");
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    }
    if (c == '\0') return std::unexpected("a file URI with a NUL byte");
    out.push_back(c);
  }
  return out;
}

std::string path_to_file_uri(std::string_view absolute_path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "file://";
  out.reserve(7 + absolute_path.size() * 3);
  for (unsigned char c : absolute_path) {
    if (is_unreserved(c) || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace ferry::protocol

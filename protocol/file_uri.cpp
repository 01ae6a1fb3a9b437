// file:// URI <-> path: see file_uri.hpp.
#include "protocol/file_uri.hpp"

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

bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
char ascii_upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (ascii_lower(s[i]) != prefix[i]) return false;
  return true;
}
bool equals_nocase(std::string_view s, std::string_view lower) { return s.size() == lower.size() && starts_with_nocase(s, lower); }

// %XX escapes decoded; a truncated or non-hex escape and a NUL byte (escaped or not) refused.
std::expected<std::string, std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) return std::unexpected("truncated %-escape in a file URI");
      int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi < 0 || lo < 0) return std::unexpected("bad %-escape in a file URI");
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    }
    if (c == '\0') return std::unexpected("a file URI with a NUL byte");
    out.push_back(c);
  }
  return out;
}

// Every byte outside the unreserved set and '/' as %XX (upper-case hex, as VS Code writes).
void percent_encode(std::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if (is_unreserved(c) || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
}

// A file URI split: its authority (still escaped) and its path (escaped, query and fragment cut).
struct UriParts {
  std::string_view authority, path;
};

std::expected<UriParts, std::string> split_file_uri(std::string_view uri) {
  if (!starts_with_nocase(uri, "file://")) return std::unexpected("not a file:// URI: " + std::string(uri.substr(0, 80)));
  std::string_view rest = uri.substr(7);
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return std::unexpected("a file URI needs an absolute path");
  UriParts parts{rest.substr(0, slash), rest.substr(slash)};
  // A query or fragment is not part of the file's name.
  if (auto end = parts.path.find_first_of("?#"); end != std::string_view::npos) parts.path = parts.path.substr(0, end);
  return parts;
}

// "server/share/rest" (already decoded, '/'-separated) as "\\server\share\rest".
std::expected<std::string, std::string> unc_path(std::string_view server_share) {
  const auto slash = server_share.find('/');
  const std::string_view server = server_share.substr(0, slash);
  if (server.empty()) return std::unexpected("a UNC file URI needs a server name");
  if (server.find_first_of("\\:@") != std::string_view::npos)
    return std::unexpected("a file URI's server name with '\\', ':' or '@' (" + std::string(server.substr(0, 80)) + ")");
  const std::string_view share = slash == std::string_view::npos ? std::string_view() : server_share.substr(slash + 1);
  if (share.empty() || share.front() == '/') return std::unexpected("a UNC file URI needs a share after the server");
  std::string out = "\\\\";
  out.append(server_share);
  for (char& c : out)
    if (c == '/') c = '\\';
  return out;
}

std::expected<std::string, std::string> windows_path_of(const UriParts& uri) {
  auto path = percent_decode(uri.path);
  if (!path) return path;
  if (!uri.authority.empty() && !equals_nocase(uri.authority, "localhost")) {
    auto host = percent_decode(uri.authority);
    if (!host) return host;
    return unc_path(*host + *path);
  }
  const std::string& p = *path;  // "/c:/x", "/C|/x", "//server/share/x"
  if (p.starts_with("//")) return unc_path(std::string_view(p).substr(2));
  const bool drive = p.size() >= 3 && is_ascii_letter(p[1]) && (p[2] == ':' || p[2] == '|') &&
                     (p.size() == 3 || p[3] == '/' || p[3] == '\\');
  if (!drive) return std::unexpected("a Windows file URI needs a drive letter or a server: " + p.substr(0, 80));
  std::string out{ascii_upper(p[1]), ':'};
  out.append(p.size() == 3 ? std::string_view("/") : std::string_view(p).substr(3));
  for (char& c : out)
    if (c == '/') c = '\\';
  return out;
}

std::string windows_file_uri(std::string_view path_in) {
  std::string p(path_in);
  for (char& c : p)
    if (c == '\\') c = '/';
  // Win32's long-path prefixes: "\\?\C:\x" is "C:\x", "\\?\UNC\server\share" is "\\server\share".
  if (p.starts_with("//?/UNC/") || p.starts_with("//?/unc/")) p.erase(2, 6);
  else if (p.starts_with("//?/")) p.erase(0, 4);
  std::string out = "file://";
  out.reserve(8 + p.size() * 3);
  if (p.size() >= 2 && is_ascii_letter(p[0]) && p[1] == ':' && (p.size() == 2 || p[2] == '/')) {
    out += '/';
    out += ascii_lower(p[0]);
    out += "%3A";
    percent_encode(p.size() == 2 ? std::string_view("/") : std::string_view(p).substr(2), out);
  } else if (p.starts_with("//") && !p.starts_with("///")) {
    const auto slash = p.find('/', 2);
    std::string host = p.substr(2, slash == std::string::npos ? std::string::npos : slash - 2);
    for (char& c : host) c = ascii_lower(c);
    percent_encode(host, out);
    if (slash != std::string::npos) percent_encode(std::string_view(p).substr(slash), out);
  } else {
    if (!p.starts_with('/')) out += '/';  // never read back as a server's name
    percent_encode(p, out);
  }
  return out;
}

}  // namespace

std::expected<std::string, std::string> file_uri_to_path(std::string_view uri, PathStyle style) {
  auto parts = split_file_uri(uri);
  if (!parts) return std::unexpected(std::move(parts.error()));
  if (style == PathStyle::windows) return windows_path_of(*parts);
  if (!parts->authority.empty() && parts->authority != "localhost")
    return std::unexpected("file URI names another host (" + std::string(parts->authority.substr(0, 80)) + ")");
  return percent_decode(parts->path);
}

std::expected<std::filesystem::path, std::string> file_uri_to_fs_path(std::string_view uri) {
  auto path = file_uri_to_path(uri);
  if (!path) return std::unexpected(std::move(path.error()));
  try {
    return std::filesystem::path(std::u8string(path->begin(), path->end()));
  } catch (const std::exception&) {  // Windows: not UTF-8, so no UTF-16 name
    return std::unexpected("a file URI whose name is not UTF-8: " + std::string(uri.substr(0, 80)));
  }
}

std::string fs_path_to_file_uri(const std::filesystem::path& absolute_path) {
  std::u8string utf8;
  try {
    utf8 = absolute_path.u8string();
  } catch (const std::exception&) {  // Windows: a name with a lone UTF-16 surrogate
    return path_to_file_uri(absolute_path.string());
  }
  return path_to_file_uri(std::string_view(reinterpret_cast<const char*>(utf8.data()), utf8.size()));
}

std::string path_to_file_uri(std::string_view absolute_path, PathStyle style) {
  if (style == PathStyle::windows) return windows_file_uri(absolute_path);
  std::string out = "file://";
  out.reserve(7 + absolute_path.size() * 3);
  percent_encode(absolute_path, out);
  return out;
}

}  // namespace ferry::protocol

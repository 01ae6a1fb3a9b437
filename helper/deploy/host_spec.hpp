// The `host` field of ferry.json: "local", an ssh config alias, or [user@]host[:port]. One regex
// shared with protocol/spec/ferry.schema.json, so the schema and the C++ check cannot drift.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>

namespace ferry::deploy {

inline constexpr std::string_view kLocalHost = "local";

// ECMAScript syntax; the same text appears as the schema's "pattern" for /host. A leading '-'
// is refused so a host can never be read as an ssh option.
inline constexpr const char* kHostPattern =
    "^(?:[A-Za-z0-9_][A-Za-z0-9._-]*@)?(?:[A-Za-z0-9_][A-Za-z0-9._-]*|\\[[0-9A-Fa-f:.]+\\])"
    "(?::(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$";

struct HostSpec {
  std::optional<std::string> user;
  std::string host;          // alias or hostname (IPv6 without brackets)
  std::optional<int> port;
  bool is_local() const { return !user && !port && host == kLocalHost; }
};

// Parses and checks the grammar; the error says what was expected.
std::expected<HostSpec, std::string> parse_host(std::string_view text);

}  // namespace ferry::deploy

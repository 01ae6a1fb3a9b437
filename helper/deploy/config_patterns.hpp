// ferry.json's string patterns, shared verbatim with protocol/spec/ferry.schema.json, and a quick
// accept for the common shapes of each: compiling a libstdc++ std::regex costs more than the rest
// of loading ferry.json, and every CLI command loads it. A quick accept only ever says yes to
// strings the pattern matches (test_config_patterns holds each to its regex); anything else goes
// to the regex, whose answer stands.
#pragma once

#include <string_view>

namespace ferry::deploy {

inline constexpr const char* kNamePattern = "^(?!\\.\\.?$)[A-Za-z0-9._-]{1,100}$";
inline constexpr const char* kLocalPathPattern = "^(?!\\s)(?!.*\\s$)(?!/)(?!(?:.*/)?\\.\\.(?:/|$)).+$";
inline constexpr const char* kRemotePathPattern = "^(?!.*\\s$)(?:/|~/|~$)(?!(?:.*/)?\\.\\.(?:/|$)).*$";
inline constexpr const char* kEnvNamePattern = "^[A-Za-z_][A-Za-z0-9_]*$";
inline constexpr const char* kTunnelNamePattern = "^[A-Za-z0-9._-]{1,64}$";
// A launch name becomes a file name (.run/ferry NAME.run.xml) and a word on IDE command lines:
// no '/', no quotes, no leading '-' (it would read as an option), no blank at either end.
inline constexpr const char* kLaunchNamePattern = "^[A-Za-z0-9_](?:[A-Za-z0-9 ._-]{0,62}[A-Za-z0-9._-])?$";
inline constexpr const char* kModulePattern = "^[A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)*$";

// True only when `s` certainly matches `pattern` (one of the above, or host_spec.hpp's
// kHostPattern); false means "ask the regex".
bool quick_accept(std::string_view s, const char* pattern);

}  // namespace ferry::deploy

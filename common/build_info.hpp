// What this build is: ferry's version and the git commit it was built from ("unknown" outside a
// checkout, "-dirty" with uncommitted changes). Every ferry binary carries the string
// "FERRY-BUILD <version> <commit>" in its bytes, so one binary can check another's build unrun.
#pragma once

#include <string>
#include <string_view>

namespace ferry {
std::string_view build_version();
std::string_view build_commit();

inline constexpr std::string_view kBuildMarkerPrefix = "FERRY-BUILD ";
// "0.1.0 (commit 1a2b3c4d5e6f)": what `--version` prints after the program's name.
inline std::string version_text() {
  return std::string(build_version()) + " (commit " + std::string(build_commit()) + ")";
}
}  // namespace ferry

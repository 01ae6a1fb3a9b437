// Temp names for atomic writes: the bytes go to a fresh name in the target's own directory
// (so the final rename(2) stays on one file system), then rename over the target.
#pragma once

#include <string>
#include <string_view>

namespace ferry::posix {

// Every ferry temp name starts with this: scans, listings and Python-source mirrors skip such
// names, and a leftover from a killed writer is recognised and swept.
inline constexpr std::string_view kTempPrefix = ".ferry-tmp.";

// ".ferry-tmp.<final name, at most 200 bytes>.<16 random hex digits>": a bare name (no '/'),
// to be created beside `final_name` with O_EXCL (or symlinkat, which also fails on a clash).
std::string temp_name(std::string_view final_name);

}  // namespace ferry::posix

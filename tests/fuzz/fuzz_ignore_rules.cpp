// Fuzzes ignore files (outside bytes: any .gitignore / .ferryignore in a project) and the glob
// matcher: parsing must never fail, matching must terminate and stay in bounds, and is_ignored
// must agree with explain().
//
// Input: pattern lines, a NUL byte, then one path per line ("/" suffix: a directory).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "helper/sync/ignore_rules.hpp"
#include "helper/sync/wildmatch.hpp"

using namespace ferry::sync;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;  // keeps backtracking-heavy inputs within the per-run timeout
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t split = input.find('\0');
  const std::string_view patterns = input.substr(0, split);
  const std::string_view paths = split == std::string_view::npos ? std::string_view{} : input.substr(split + 1);

  const auto parsed = parse_ignore_patterns(patterns, ".gitignore");
  std::vector<std::string> lines;
  for (const auto& p : parsed) lines.push_back(p.text);
  const IgnoreMatcher m = IgnoreMatcher::from_patterns(lines);

  std::size_t at = 0;
  while (at < paths.size()) {
    std::size_t end = paths.find('\n', at);
    if (end == std::string_view::npos) end = paths.size();
    std::string_view path = paths.substr(at, end - at);
    at = end + 1;
    const bool is_dir = path.ends_with('/');
    if (is_dir) path.remove_suffix(1);
    if (path.empty() || path.find('\0') != std::string_view::npos) continue;
    const bool ignored = m.is_ignored(path, is_dir);
    const auto why = m.explain(path, is_dir);
    const bool git_dir = path == ".git" || path.starts_with(".git/") || path.find("/.git/") != std::string_view::npos ||
                         path.ends_with("/.git");
    if (!git_dir && ignored != (why.has_value() && !why->negated)) std::abort();
    for (const auto& p : parsed) {
      (void)wildmatch(p.glob, path, true);
      (void)wildmatch(p.glob, path, false);
    }
  }
  return 0;
}

// path_glob.hpp on Windows: the pattern split at `\` and `/`, each wildcard component matched
// against its folder's entries (case-insensitively, as NTFS names compare), fixed ones taken as
// they are. Paths in and out are UTF-8.
#include "common/path_glob.hpp"

#include <algorithm>
#include <cwctype>
#include <filesystem>
#include <string_view>

namespace ferry::platform {
namespace fs = std::filesystem;
namespace {

bool has_wildcard(std::wstring_view s) { return s.find_first_of(L"*?[") != std::wstring_view::npos; }

// fnmatch without flags, on UTF-16 units, folding case.
bool match(std::wstring_view p, std::wstring_view t) {
  std::size_t pi = 0, ti = 0, star = std::wstring_view::npos, mark = 0;
  auto fold = [](wchar_t c) { return std::towlower(c); };
  while (ti < t.size()) {
    if (pi < p.size() && p[pi] == L'*') {
      star = pi++;
      mark = ti;
      continue;
    }
    bool ok = false;
    std::size_t next = pi + 1;
    if (pi < p.size() && p[pi] == L'[') {
      const std::size_t close = p.find(L']', pi + 2);
      if (close != std::wstring_view::npos) {
        std::size_t i = pi + 1;
        const bool negate = p[i] == L'!' || p[i] == L'^';
        if (negate) ++i;
        bool in = false;
        for (; i < close; ++i) {
          if (i + 2 < close && p[i + 1] == L'-') {
            in |= fold(t[ti]) >= fold(p[i]) && fold(t[ti]) <= fold(p[i + 2]);
            i += 2;
          } else {
            in |= fold(t[ti]) == fold(p[i]);
          }
        }
        ok = in != negate;
        next = close + 1;
      } else {
        ok = t[ti] == L'[';
      }
    } else if (pi < p.size()) {
      ok = p[pi] == L'?' || fold(p[pi]) == fold(t[ti]);
    }
    if (ok) {
      pi = next;
      ++ti;
    } else if (star != std::wstring_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == L'*') ++pi;
  return pi == p.size();
}

std::string utf8_of(const fs::path& p) {
  const std::u8string u8 = p.u8string();
  return std::string(u8.begin(), u8.end());
}

}  // namespace

std::vector<std::string> glob_paths(const std::string& pattern) {
  const fs::path whole(std::u8string(pattern.begin(), pattern.end()));
  std::vector<fs::path> found{whole.root_path()};
  for (const auto& part : whole.relative_path()) {
    const std::wstring name = part.wstring();
    std::vector<fs::path> next;
    for (const auto& base : found) {
      std::error_code ec;
      if (!has_wildcard(name)) {
        if (fs::exists(base / part, ec)) next.push_back(base / part);
        continue;
      }
      for (fs::directory_iterator it(base.empty() ? fs::path(L".") : base, ec), end; !ec && it != end; it.increment(ec)) {
        const std::wstring entry = it->path().filename().wstring();
        if (entry.starts_with(L'.') && !name.starts_with(L'.')) continue;  // as glob(3): no hidden names
        if (match(name, entry)) next.push_back(base / it->path().filename());
      }
    }
    found = std::move(next);
  }
  std::vector<std::string> out;
  if (found.size() == 1 && found.front() == whole.root_path()) return out;  // an empty pattern
  for (const auto& p : found) out.push_back(utf8_of(p));
  std::ranges::sort(out);
  return out;
}

}  // namespace ferry::platform

// Whether a local path lies inside a root, and where: std::filesystem's lexically_relative, with
// names compared the way the platform's file systems compare them. POSIX: exactly. Windows: without
// regard to case (NTFS and the drive letter: "c:\users\me\proj\a.py" is inside "C:\Users\Me\proj"),
// which lexically_relative, comparing strings, gets wrong. Lexical only: no link is resolved, so
// callers that need the real place canonicalize first.
#pragma once

#include <filesystem>

namespace ferry::posix {

// Whether two names (one path component each: a root name, a root directory or a file name) name
// the same thing here.
bool names_match(const std::filesystem::path& a, const std::filesystem::path& b);

// `path` relative to `root` as lexically_relative gives it ("." for the root itself, "../x" or an
// empty path for what is not below it), the names `path` shares with `root` compared as above.
std::filesystem::path relative_to(const std::filesystem::path& path, const std::filesystem::path& root);

// `path` is `root` or below it, component by component, compared as above.
bool is_within(const std::filesystem::path& path, const std::filesystem::path& root);

}  // namespace ferry::posix

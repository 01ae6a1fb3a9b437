// Names a Windows file system cannot hold as they are: reserved device names, forbidden
// characters, trailing dots and spaces, names that are not UTF-8, and names that differ only in
// case (one name on NTFS). Pure: the pull asks before it writes on a Windows laptop, and reports
// such a file instead of writing it; ferry never renames one to make it fit.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::sync {

// What is wrong with one path component (UTF-8) on Windows, in words naming it, or nothing:
//   "'aux.py': AUX is a device name on Windows (with any extension too)"
//   "'a:b': Windows does not allow ':' in a name"
//   "'x.': Windows drops a trailing dot from a name"
// Checked: CON PRN AUX NUL CONIN$ CONOUT$ COM0-9 LPT0-9 COM¹²³ LPT¹²³ (any case, any extension,
// spaces before the dot), < > : " / \ | ? * and control characters 0x00-0x1F, a trailing dot or
// space, "", "." and "..", and bytes that are not UTF-8 (Windows names are UTF-16: such a name
// could only be written changed).
std::optional<std::string> windows_name_problem(std::string_view name);

// A name's case folded the way ferry compares names for Windows: each character to its simple
// upper case (Unicode's one-to-one mapping, as NTFS's upcase table) for ASCII, Latin-1, Latin
// Extended-A, Greek and Cyrillic; anything else, and bytes that are not UTF-8, as they are. No
// normalization: "é" precomposed and "e" + U+0301 are two names on NTFS too.
std::string fold_case(std::string_view utf8);

// Relative paths ('/'-separated, UTF-8) that differ only in case (fold_case), grouped: each group
// is two or more distinct spellings of one name on Windows, sorted, the groups sorted. Folders
// count as paths too: {"A/x", "a/y"} gives {"A", "a"} (both land in one folder on Windows). A
// clash is reported where it starts: {"A/x", "a/x"} gives {"A", "a"} alone, not the files too.
std::vector<std::vector<std::string>> case_clashes(std::span<const std::string> rel_paths);

// Of these relative paths, the ones Windows cannot hold as they are, each with why: a component
// with a windows_name_problem, or one that clashes by case with another path of the list (the
// reason names the folder when it is a folder's name: "in 'sub/aux': 'aux': AUX is a device
// name on Windows ..."). Paths not in the map are fine.
std::map<std::string, std::string> windows_path_problems(std::span<const std::string> rel_paths);

}  // namespace ferry::sync

// Glob matching with git's wildmatch semantics: `*`, `?`, `[...]` classes (ranges, `!`/`^`
// negation, `[:name:]`), backslash escapes, and, in pathname mode, `*`/`?`/classes that stop at
// `/` while a slash-delimited `**` spans directories.
#pragma once

#include <string_view>

namespace ferry::sync {

// pathname: `/` is special (git's WM_PATHNAME); off for basename-only patterns.
bool wildmatch(std::string_view pattern, std::string_view text, bool pathname);

}  // namespace ferry::sync

// Shell-style wildcards over the file system, as OpenSSH's Include expands them: `*`, `?` and
// `[...]` in any component, matches sorted, nothing (not an error) when none match. POSIX: glob(3);
// Windows: a walk per component, names compared without case as the file system does.
#pragma once

#include <string>
#include <vector>

namespace ferry::platform {

std::vector<std::string> glob_paths(const std::string& pattern);

}  // namespace ferry::platform

// path_glob.hpp on POSIX: glob(3).
#include "common/path_glob.hpp"

#include <glob.h>

namespace ferry::platform {

std::vector<std::string> glob_paths(const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  return out;
}

}  // namespace ferry::platform

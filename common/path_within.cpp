// relative_to and is_within (see path_within.hpp): the platform's names_match decides which of
// `path`'s leading names are `root`'s; those take `root`'s spelling, so lexically_relative sees them
// equal.
#include "common/path_within.hpp"

namespace ferry::posix {

namespace fs = std::filesystem;

fs::path relative_to(const fs::path& path, const fs::path& root) {
  fs::path respelled;
  auto p = path.begin();
  for (auto r = root.begin(); p != path.end() && r != root.end() && names_match(*p, *r); ++p, ++r) respelled /= *r;
  for (; p != path.end(); ++p) respelled /= *p;
  return respelled.lexically_relative(root);
}

bool is_within(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (p == path.end() || !names_match(*p, *r)) return false;
  }
  return true;
}

}  // namespace ferry::posix

// names_match on POSIX (see path_within.hpp): byte for byte, as the file systems compare names.
#include "common/path_within.hpp"

namespace ferry::posix {

bool names_match(const std::filesystem::path& a, const std::filesystem::path& b) { return a.native() == b.native(); }

}  // namespace ferry::posix

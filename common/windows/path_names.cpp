// names_match on Windows (see path_within.hpp): CompareStringOrdinal without regard to case, the
// comparison NTFS makes (upper-casing by the file system's table, no locale); '/' and '\' are one
// separator.
#include "common/path_within.hpp"

#include <windows.h>

namespace ferry::posix {

bool names_match(const std::filesystem::path& a, const std::filesystem::path& b) {
  if (a.has_root_directory() && b.has_root_directory() && !a.has_root_name() && !b.has_root_name()) return true;  // "\" and "/"
  const std::wstring& x = a.native();
  const std::wstring& y = b.native();
  return ::CompareStringOrdinal(x.data(), static_cast<int>(x.size()), y.data(), static_cast<int>(y.size()), TRUE) == CSTR_EQUAL;
}

}  // namespace ferry::posix

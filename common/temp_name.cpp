// Temp names for atomic writes; see temp_name.hpp.
#include "common/temp_name.hpp"

#include <cstdio>
#include <random>

namespace ferry::posix {

std::string temp_name(std::string_view final_name) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(rng()));
  std::string n(kTempPrefix);
  n.append(final_name.substr(0, 200)).append(".").append(suffix);
  return n;
}

}  // namespace ferry::posix

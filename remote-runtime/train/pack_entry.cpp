// Adapter from ferry-train's argv to trainsupport's pack command.
#include "remote-runtime/train/pack_entry.hpp"

#include <iostream>

namespace ferry::train {

int run_pack_entry(const std::vector<std::string>&) {
  std::cerr << "ferry-train pack: not available in this build yet\n";
  return 2;
}

}  // namespace ferry::train

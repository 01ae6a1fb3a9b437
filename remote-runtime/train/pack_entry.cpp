// Adapter from ferry-train's argv to ferry_train_support's pack command.
#include "remote-runtime/train/pack_entry.hpp"

#include "remote-runtime/train/pack_command.hpp"

namespace ferry::train {

int run_pack_entry(const std::vector<std::string>& args) { return run_pack(args); }

}  // namespace ferry::train

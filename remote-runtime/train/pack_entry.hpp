// `ferry-train pack ...`: forwards to the .ftensor converters of ferry_train_support.
#pragma once

#include <string>
#include <vector>

namespace ferry::train {

int run_pack_entry(const std::vector<std::string>& args);

}  // namespace ferry::train

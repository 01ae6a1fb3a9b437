// Human memory sizes ("4GiB", "512 MB", "1.5GiB") <-> bytes, for configs and messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "remote-runtime/train/expected.hpp"

namespace ferry::train {

// Units: B, KB/MB/GB/TB (powers of 1000), KiB/MiB/GiB/TiB (powers of 1024); no unit means bytes.
// The result must be >= 1 byte and fit in int64.
Expected<std::int64_t, std::string> parse_memory_size(std::string_view text);

// "3.50 GiB"-style rendering for log and advice messages.
std::string format_bytes(double bytes);

}  // namespace ferry::train

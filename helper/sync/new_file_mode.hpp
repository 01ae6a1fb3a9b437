// The mode a file new to the box gets where the laptop has no permission bits to give it
// (Windows): 0755 for a script (its first bytes are "#!", so the box can run it as ./name),
// else 0644. What PlanOptions::new_file_mode is on Windows.
#pragma once

#include <cstdint>
#include <filesystem>

namespace ferry::sync {

// 0644 too when the file cannot be read (the push then reports that itself).
std::uint32_t new_file_mode(const std::filesystem::path& file);

}  // namespace ferry::sync

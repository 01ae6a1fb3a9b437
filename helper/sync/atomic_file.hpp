// Replacing a small local state file (index, manifest) so a crash leaves the old or the new
// version, never a torn one.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <string_view>

namespace ferry::sync {

// Writes a temp file beside `file`, fsyncs it, renames it over `file`, fsyncs the directory.
// Creates the parent directory if missing.
std::expected<void, std::string> write_file_atomically(const std::filesystem::path& file, std::string_view bytes);

// The whole file, nullopt-like error "missing" when it does not exist.
std::expected<std::string, std::string> read_whole_file(const std::filesystem::path& file);

}  // namespace ferry::sync

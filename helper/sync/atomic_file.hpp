// Replacing a small local file (index, manifest, a project file) so a crash leaves the old or
// the new version, never a torn one.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <string_view>

namespace ferry::sync {

// Writes a temp file beside `file`, fsyncs it, renames it over `file`, fsyncs the directory.
// Creates the parent directory if missing, owner-only (0700, also when an older ferry made it 0755).
// The file gets `mode` (0600: ferry's own state is nobody else's business).
std::expected<void, std::string> write_file_atomically(const std::filesystem::path& file, std::string_view bytes,
                                                       std::uint32_t mode = 0600);

// The same for a file of the user's project (ferry.json, the IDE files): an existing file keeps
// its mode, a new one gets 0644 like any file the user makes.
std::expected<void, std::string> write_project_file_atomically(const std::filesystem::path& file, std::string_view bytes);

// The whole file, nullopt-like error "missing" when it does not exist.
std::expected<std::string, std::string> read_whole_file(const std::filesystem::path& file);

}  // namespace ferry::sync

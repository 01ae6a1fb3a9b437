// Programs on this system: the path of the running executable (ferry looks for the agents it
// ships beside itself) and whether a file can be run. POSIX: /proc/self/exe and access(X_OK);
// Windows: GetModuleFileNameW, and any regular file (Windows has no exec bit; the agents ferry
// uploads are Linux programs it only reads here). Implementations in common/posix/ and common/windows/.
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ferry::platform {

std::expected<std::filesystem::path, std::string> executable_path();
bool is_executable_file(const std::filesystem::path& file);
// The program a shell would run for `name` (no folder in it): the first match along PATH (split at
// ':'; on Windows at ';', with ".exe" added when `name` has no extension).
std::optional<std::filesystem::path> find_on_path(std::string_view name);

}  // namespace ferry::platform

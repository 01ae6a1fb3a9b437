// executables.hpp on POSIX (Linux's /proc).
#include "common/executables.hpp"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace ferry::platform {
namespace fs = std::filesystem;

std::expected<fs::path, std::string> executable_path() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::unexpected("cannot read /proc/self/exe: " + ec.message());
  return self;
}

bool is_executable_file(const fs::path& file) { return ::access(file.c_str(), X_OK) == 0; }

std::optional<fs::path> find_on_path(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    fs::path candidate = fs::path(dir) / name;
    if (is_executable_file(candidate)) return candidate;
  }
  return std::nullopt;
}

}  // namespace ferry::platform

// executables.hpp on Windows.
#include "common/executables.hpp"

#include <windows.h>

#include <cstdlib>
#include <sstream>
#include <vector>

namespace ferry::platform {
namespace fs = std::filesystem;

std::expected<fs::path, std::string> executable_path() {
  std::vector<wchar_t> buf(MAX_PATH);
  for (;;) {
    const DWORD n = ::GetModuleFileNameW(nullptr, buf.data(), static_cast<DWORD>(buf.size()));
    if (n == 0) return std::unexpected("cannot find this program's path (error " + std::to_string(::GetLastError()) + ")");
    if (n < buf.size()) return fs::path(std::wstring(buf.data(), n));
    buf.resize(buf.size() * 2);
  }
}

bool is_executable_file(const fs::path& file) {
  std::error_code ec;
  return fs::is_regular_file(file, ec);
}

std::optional<fs::path> find_on_path(std::string_view name) {
  fs::path file(std::u8string(name.begin(), name.end()));
  if (!file.has_extension()) file += L".exe";
  const wchar_t* path = ::_wgetenv(L"PATH");
  std::wstringstream dirs(path ? path : L"");
  for (std::wstring dir; std::getline(dirs, dir, L';');) {
    if (dir.empty()) continue;
    fs::path candidate = fs::path(dir) / file;
    if (is_executable_file(candidate)) return candidate;
  }
  return std::nullopt;
}

}  // namespace ferry::platform

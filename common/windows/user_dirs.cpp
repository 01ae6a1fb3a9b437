// user_dirs.hpp on Windows: the profile variables, then the shell's known folders. Paths are built
// from the wide environment, so a non-ASCII profile name survives.
#include "common/user_dirs.hpp"

#include <windows.h>
#include <shlobj.h>

namespace ferry::platform {
namespace fs = std::filesystem;
namespace {

std::optional<fs::path> absolute_env(const wchar_t* name) {
  const wchar_t* v = ::_wgetenv(name);
  if (v == nullptr || *v == L'\0') return std::nullopt;
  fs::path p(v);
  if (!p.is_absolute()) return std::nullopt;
  return p;
}

std::optional<fs::path> known_folder(const KNOWNFOLDERID& id) {
  PWSTR raw = nullptr;
  std::optional<fs::path> out;
  if (::SHGetKnownFolderPath(id, KF_FLAG_DEFAULT, nullptr, &raw) == S_OK && raw != nullptr) out = fs::path(raw);
  ::CoTaskMemFree(raw);
  return out;
}

}  // namespace

std::optional<fs::path> home_dir() {
  if (auto h = absolute_env(L"USERPROFILE")) return h;
  return known_folder(FOLDERID_Profile);
}

std::optional<fs::path> login_home_dir() { return home_dir(); }

std::optional<fs::path> home_of_user(const std::string&) { return std::nullopt; }

fs::path ssh_system_dir() {
  if (auto p = absolute_env(L"PROGRAMDATA")) return *p / L"ssh";
  if (auto p = known_folder(FOLDERID_ProgramData)) return *p / L"ssh";
  return fs::path(L"C:\\ProgramData\\ssh");
}

std::string user_name() {
  wchar_t buf[257];
  DWORD n = 257;
  if (!::GetUserNameW(buf, &n) || n == 0) return "";
  const std::u8string u8 = fs::path(std::wstring(buf, n - 1)).u8string();
  return std::string(u8.begin(), u8.end());
}

std::optional<fs::path> config_home() {
  if (auto x = absolute_env(L"XDG_CONFIG_HOME")) return x;
  if (auto a = absolute_env(L"APPDATA")) return a;
  return known_folder(FOLDERID_RoamingAppData);
}

std::optional<fs::path> cache_home() {
  if (auto x = absolute_env(L"XDG_CACHE_HOME")) return x;
  if (auto a = absolute_env(L"LOCALAPPDATA")) return a;
  return known_folder(FOLDERID_LocalAppData);
}

std::optional<std::string> default_ssh_agent() { return "Pageant, then \\\\.\\pipe\\openssh-ssh-agent"; }

}  // namespace ferry::platform

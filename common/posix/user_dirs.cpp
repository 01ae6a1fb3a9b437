// user_dirs.hpp on POSIX: the environment, then the password database.
#include "common/user_dirs.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

namespace ferry::platform {
namespace fs = std::filesystem;
namespace {

std::optional<fs::path> absolute_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v != '/') return std::nullopt;
  return fs::path(v);
}

std::optional<fs::path> passwd_home() {
  const passwd* pw = ::getpwuid(::getuid());
  if (pw == nullptr || pw->pw_dir == nullptr || *pw->pw_dir != '/') return std::nullopt;
  return fs::path(pw->pw_dir);
}

}  // namespace

std::optional<fs::path> home_dir() {
  if (auto h = absolute_env("HOME")) return h;
  return passwd_home();
}

std::optional<fs::path> login_home_dir() {
  if (auto h = passwd_home()) return h;
  return absolute_env("HOME");
}

std::optional<fs::path> home_of_user(const std::string& name) {
  const passwd* pw = ::getpwnam(name.c_str());
  if (pw == nullptr || pw->pw_dir == nullptr) return std::nullopt;
  return fs::path(pw->pw_dir);
}

fs::path ssh_system_dir() { return "/etc/ssh"; }

std::string user_name() {
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_name != nullptr) return pw->pw_name;
  const char* u = std::getenv("USER");
  return u != nullptr ? u : "";
}

std::optional<fs::path> config_home() {
  if (auto x = absolute_env("XDG_CONFIG_HOME")) return x;
  if (auto h = home_dir()) return *h / ".config";
  return std::nullopt;
}

std::optional<fs::path> cache_home() {
  if (auto x = absolute_env("XDG_CACHE_HOME")) return x;
  if (auto h = home_dir()) return *h / ".cache";
  return std::nullopt;
}

std::optional<std::string> default_ssh_agent() { return std::nullopt; }

}  // namespace ferry::platform

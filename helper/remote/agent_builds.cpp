// Which agent build a box gets: see agent_builds.hpp.
#include "helper/remote/agent_builds.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "common/executables.hpp"
#include "common/user_dirs.hpp"
#include "helper/remote/local_endpoint.hpp"

namespace ferry::remote {
namespace fs = std::filesystem;

std::expected<fs::path, std::string> find_agent_binary() {
  if (const char* env = std::getenv("FERRY_AGENT"); env && *env) {
    fs::path p(env);
    if (!platform::is_executable_file(p)) return std::unexpected("$FERRY_AGENT='" + p.string() + "' is not an executable file");
    return p;
  }
  auto self = platform::executable_path();
  if (!self) return std::unexpected(self.error());
  fs::path p = self->parent_path() / "ferry-agent";
  if (!platform::is_executable_file(p))
    return std::unexpected("no ferry-agent next to " + self->string() + " (set $FERRY_AGENT to its path)");
  return p;
}

fs::path default_sandbox_root(std::string_view project_name) {
  const fs::path cache = platform::cache_home().value_or(fs::temp_directory_path() / ".cache");
  return cache / "ferry" / "local" / std::string(project_name.empty() ? "default" : project_name);
}

std::string_view native_arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
#error "ferry builds for x86-64 and aarch64"
#endif
}

std::expected<fs::path, std::string> find_agent_for_arch(std::string_view arch) {
  std::string var = "FERRY_AGENT_" + std::string(arch);
  std::transform(var.begin(), var.end(), var.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (const char* env = std::getenv(var.c_str()); env && *env) {
    if (!platform::is_executable_file(env)) return std::unexpected("$" + var + "='" + env + "' is not an executable file");
    return fs::path(env);
  }
  if (arch == native_arch()) return find_agent_binary();
  auto self = platform::executable_path();
  if (!self) return std::unexpected(self.error());
  fs::path p = self->parent_path() / ("ferry-agent-" + std::string(arch));
  if (!platform::is_executable_file(p))
    return std::unexpected("this ferry has no " + std::string(arch) + " agent (no " + p.string() + "; set $" + var + ")");
  return p;
}

std::optional<std::string> agent_arch_of(std::string_view uname_sm) {
  while (!uname_sm.empty() && std::isspace(static_cast<unsigned char>(uname_sm.back()))) uname_sm.remove_suffix(1);
  if (uname_sm == "Linux x86_64") return "x86_64";
  if (uname_sm == "Linux aarch64" || uname_sm == "Linux arm64") return "aarch64";
  return std::nullopt;
}

std::string unsupported_box_message(std::string_view box, std::string_view uname_sm) {
  std::string said(uname_sm);
  while (!said.empty() && std::isspace(static_cast<unsigned char>(said.back()))) said.pop_back();
  if (said.empty()) said = "an unknown system (uname -sm printed nothing)";
  return std::string(box) + " is " + said + ": ferry-agent runs on x86-64 and aarch64 Linux";
}

}  // namespace ferry::remote

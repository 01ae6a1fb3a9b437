// Which agent build a box gets: see agent_builds.hpp.
#include "helper/remote/agent_builds.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "common/build_info.hpp"
#include "common/executables.hpp"
#include "common/user_dirs.hpp"
#include "helper/remote/local_endpoint.hpp"

namespace ferry::remote {
namespace fs = std::filesystem;

std::vector<fs::path> agent_dirs() {
  auto self = platform::executable_path();
  if (!self) return {};
  const fs::path bin = self->parent_path();
  return {bin, (bin / ".." / "libexec" / "ferry").lexically_normal()};
}

namespace {

// `name` in the first of agent_dirs() that has it as an executable file.
std::expected<fs::path, std::string> find_beside_ferry(const std::string& name, const std::string& env_hint) {
  const auto dirs = agent_dirs();
  for (const auto& dir : dirs)
    if (platform::is_executable_file(dir / name)) return dir / name;
  if (dirs.empty()) return std::unexpected("cannot tell where this ferry is installed (set " + env_hint + ")");
  return std::unexpected("no " + name + " in " + dirs[0].string() + " or " + dirs[1].string() + " (set " + env_hint + ")");
}

}  // namespace

std::expected<fs::path, std::string> find_agent_binary() {
  if (const char* env = std::getenv("FERRY_AGENT"); env && *env) {
    fs::path p(env);
    if (!platform::is_executable_file(p)) return std::unexpected("$FERRY_AGENT='" + p.string() + "' is not an executable file");
    return p;
  }
  return find_beside_ferry("ferry-agent", "$FERRY_AGENT to its path");
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
  auto found = find_beside_ferry("ferry-agent-" + std::string(arch), "$" + var);
  if (!found) return std::unexpected("this ferry has no " + std::string(arch) + " agent: " + found.error());
  return found;
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

std::optional<std::string> read_build_marker(const fs::path& binary) {
  std::ifstream in(binary, std::ios::binary);
  if (!in) return std::nullopt;
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The prefix alone can be in a binary too (ferry's own, which reads markers): the marker is the
  // one followed by "<version> <commit>" and a NUL.
  for (std::size_t at = bytes.find(kBuildMarkerPrefix); at != std::string::npos; at = bytes.find(kBuildMarkerPrefix, at + 1)) {
    const std::size_t from = at + kBuildMarkerPrefix.size();
    const std::size_t end = bytes.find('\0', from);
    if (end == std::string::npos || end - from > 200) continue;
    const std::string text = bytes.substr(from, end - from);
    const auto space = text.find(' ');
    if (space != 0 && space != std::string::npos && text.find(' ', space + 1) == std::string::npos && space + 1 < text.size())
      return text;
  }
  return std::nullopt;
}

namespace {

AgentBuildCheck check_agent_build(std::string_view arch) {
  AgentBuildCheck c{std::string(arch), "pass", "", ""};
  const bool native = arch == native_arch();
  std::string var = "FERRY_AGENT_" + std::string(arch);
  std::transform(var.begin(), var.end(), var.begin(), [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
  const bool chosen = std::getenv(var.c_str()) || (native && std::getenv("FERRY_AGENT"));
  auto found = find_agent_for_arch(arch);
  const std::string reinstall = "reinstall ferry: its agents come with it (libexec/ferry/ beside bin/ferry)";
  if (!found) {
    c.status = native ? "fail" : "warn";
    c.detail = found.error() + (native ? "" : "; " + std::string(arch) + " boxes cannot be used");
    c.fix = reinstall;
    return c;
  }
  const std::string mine = std::string(build_version()) + " " + std::string(build_commit());
  const auto theirs = read_build_marker(*found);
  if (chosen) {
    c.detail = found->string() + " (chosen by $" + (std::getenv(var.c_str()) ? var : std::string("FERRY_AGENT")) + ")";
  } else if (theirs == mine) {
    c.detail = found->string() + " (ferry " + mine + ")";
  } else {
    c.status = "fail";
    c.detail = found->string() + " is " + (theirs ? "ferry " + *theirs : std::string("of an unknown build")) +
               ", this ferry is " + mine + ": " + std::string(arch) + " boxes would get an agent of another build";
    c.fix = reinstall;
  }
  return c;
}

}  // namespace

std::vector<AgentBuildCheck> check_agent_builds() {
  std::vector<AgentBuildCheck> out;
  for (auto arch : kAgentArches) out.push_back(check_agent_build(arch));
  return out;
}

}  // namespace ferry::remote

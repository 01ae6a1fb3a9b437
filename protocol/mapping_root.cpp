// The mapping-root rule shared by ferry.json's validator and the agent: see mapping_root.hpp.
#include "protocol/mapping_root.hpp"

#include <algorithm>
#include <initializer_list>

namespace ferry::protocol {
namespace {

// "~/", "//etc/./" -> "~", "/etc": the path's components without empty ones and ".".
std::string normal_root(std::string_view path) {
  const bool home = path.starts_with('~');
  std::string out = home ? "~" : "";
  std::size_t i = home ? 1 : 0;
  while (i < path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view part = path.substr(i, j - i);
    if (!part.empty() && part != ".") out += "/" + std::string(part);
    i = j + 1;
  }
  return out.empty() ? "/" : out;
}

bool one_of_paths(std::string_view p, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), p) != list.end();
}

bool at_or_below(std::string_view p, std::initializer_list<std::string_view> list) {
  for (auto d : list)
    if (p == d || (p.starts_with(d) && p[d.size()] == '/')) return true;
  return false;
}

}  // namespace

std::optional<std::string> mapping_root_reason(std::string_view root) {
  const std::string p = normal_root(root);
  if (p == "/")
    return "it is the host's whole filesystem: a sync would list /proc, /sys and every mount, and --delete would offer "
           "to remove everything ferry did not put there";
  if (p == "~" || one_of_paths(p, {"/root", "/home"}) || (p.starts_with("/home/") && p.find('/', 6) == std::string::npos))
    return "it is a home directory itself: a sync would list all of it (caches, datasets, other projects), and --delete "
           "would offer to remove everything ferry did not put there";
  if (at_or_below(p, {"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin",
                      "/sys", "/usr", "/var/lib", "/var/log", "/var/cache"}) &&
      !at_or_below(p, {"/dev/shm"}))
    return "it is a system directory (the package manager's, the kernel's or a virtual filesystem), never a project's";
  if (one_of_paths(p, {"/tmp", "/var", "/var/tmp", "/opt", "/srv", "/mnt", "/media", "/dev/shm"}))
    return "it is shared by other users and programs: a sync would list their files, and --delete would offer to remove "
           "them; a directory of the project's own below it is fine";
  return std::nullopt;
}

std::string quoted(std::string_view path) {
  // Built up: GCC 12 warns falsely (-Wrestrict) about "\"" + string + "\"".
  std::string out(1, '"');
  out.append(path).push_back('"');
  return out;
}

std::string mapping_root_advice(std::string_view project_name) {
  return "use a directory of the project's own, e.g. " + quoted("~/work/" + std::string(project_name));
}

std::optional<std::string> remote_root_refusal(std::string_view remote, std::string_view project_name) {
  auto why = mapping_root_reason(remote);
  if (!why) return std::nullopt;
  return quoted(remote) + " cannot be a mapping root: " + *why + "; " + mapping_root_advice(project_name);
}

bool has_outer_whitespace(std::string_view path) {
  constexpr std::string_view kBlank = " \t\n\v\f\r";
  return !path.empty() && (kBlank.find(path.front()) != std::string_view::npos || kBlank.find(path.back()) != std::string_view::npos);
}

}  // namespace ferry::protocol

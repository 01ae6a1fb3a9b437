// attach_configuration: path mappings resolved to absolute paths, and the VS Code attach entry.
#include "helper/debug/attach_configuration.hpp"

#include <algorithm>

#include "common/path_within.hpp"

namespace ferry::debug {

namespace fs = std::filesystem;

namespace {

std::string without_trailing_slash(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// A local folder as text, without the separator lexically_normal leaves after "a/." (roots such
// as "/" and "C:\\" stay whole).
std::string local_folder_text(const fs::path& p) {
  return !p.has_filename() && p.has_relative_path() ? p.parent_path().string() : p.string();
}

}  // namespace

std::optional<std::string> remote_home_from(std::string_view first_remote_spec, std::string_view first_remote_root) {
  const std::string root = without_trailing_slash(std::string(first_remote_root));
  if (first_remote_spec == "~" || first_remote_spec == "~/") return root;
  if (!first_remote_spec.starts_with("~/")) return std::nullopt;
  // Built by appending: "/" + string trips GCC 12's -Wrestrict false positive.
  std::string rest(1, '/');
  rest += without_trailing_slash(std::string(first_remote_spec.substr(2)));
  if (root.size() <= rest.size() || !root.ends_with(rest)) return std::nullopt;
  return root.substr(0, root.size() - rest.size());
}

std::expected<std::vector<PathMapping>, std::string> resolve_path_mappings(const deploy::ProjectConfig& config,
                                                                          std::string_view first_remote_root,
                                                                          bool workspace_relative) {
  if (config.mappings.empty()) return std::unexpected("ferry.json has no mappings");
  if (first_remote_root.empty() || !first_remote_root.starts_with("/"))
    return std::unexpected("the remote root of the first mapping is not an absolute path: \"" +
                           std::string(first_remote_root) + "\"");
  const auto home = remote_home_from(config.mappings.front().remote, first_remote_root);
  std::vector<PathMapping> out;
  for (std::size_t i = 0; i < config.mappings.size(); ++i) {
    const auto& m = config.mappings[i];
    PathMapping pm;
    const fs::path local = (config.root / m.local).lexically_normal();
    const fs::path rel = ferry::posix::relative_to(local, config.root);
    if (workspace_relative && !rel.empty() && !rel.string().starts_with("..")) {
      pm.local_root = rel == "." ? "${workspaceFolder}" : "${workspaceFolder}/" + rel.generic_string();
    } else {
      pm.local_root = local_folder_text(local);
    }
    if (i == 0) {
      pm.remote_root = without_trailing_slash(std::string(first_remote_root));
    } else if (m.remote.starts_with("/")) {
      pm.remote_root = without_trailing_slash(fs::path(m.remote).lexically_normal().generic_string());
    } else if (m.remote == "~" || m.remote.starts_with("~/")) {
      if (!home)
        return std::unexpected("cannot resolve \"" + m.remote + "\" (/mappings/" + std::to_string(i) +
                               "/remote): the box's home is not known from the first mapping \"" +
                               config.mappings.front().remote + "\"; use an absolute remote path");
      pm.remote_root = without_trailing_slash((fs::path(*home) / m.remote.substr(m.remote.size() > 1 ? 2 : 1)).lexically_normal().generic_string());
    } else {
      return std::unexpected("/mappings/" + std::to_string(i) + "/remote \"" + m.remote +
                             "\" is neither absolute nor under ~/");
    }
    out.push_back(std::move(pm));
  }
  // debugpy tries the mappings in order and takes the first whose root prefixes the path: put
  // the deepest local roots first so a nested mapping is not shadowed by its parent.
  std::stable_sort(out.begin(), out.end(),
                   [](const PathMapping& a, const PathMapping& b) { return a.local_root.size() > b.local_root.size(); });
  return out;
}

nlohmann::json vscode_attach_configuration(const deploy::ProjectConfig& config, const std::vector<PathMapping>& mappings,
                                           const AttachOptions& options) {
  nlohmann::json path_mappings = nlohmann::json::array();
  for (const auto& m : mappings) path_mappings.push_back({{"localRoot", m.local_root}, {"remoteRoot", m.remote_root}});
  nlohmann::json entry = {
      {"name", options.name.empty() ? "ferry: attach (" + config.name + ")" : options.name},
      {"type", options.legacy_type ? "python" : "debugpy"},
      {"request", "attach"},
      {"connect", {{"host", "127.0.0.1"}, {"port", options.port}}},
      {"pathMappings", std::move(path_mappings)},
      {"justMyCode", options.just_my_code},
  };
  // Local roots are Windows paths here: debugpy on the (Linux) box maps C:\... breakpoints only when
  // told the client's OS (VS Code's Python extension adds it too; other DAP clients need it said).
  if constexpr (fs::path::preferred_separator == '\\') entry["clientOS"] = "windows";
  return entry;
}

}  // namespace ferry::debug

// The VS Code `attach` configuration `ferry debug` prints and `debug/prepare` returns: debugpy
// behind a local tunnel port, with one pathMapping per ferry.json mapping so breakpoints set on
// local files bind to the remote copies.
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "helper/deploy/project_config.hpp"

namespace ferry::debug {

struct PathMapping {
  std::string local_root;   // absolute local directory (or ${workspaceFolder}/...)
  std::string remote_root;  // absolute directory on the box
};

// The box's home ("~") as far as the first mapping and the agent's root for it tell: the remote
// spec "~/a/b" resolved to "/home/u/a/b" means home is "/home/u". nullopt when the spec is
// absolute or does not end the way the root does.
std::optional<std::string> remote_home_from(std::string_view first_remote_spec, std::string_view first_remote_root);

// Every mapping of `config` as an absolute local/remote pair. `first_remote_root` is the
// resolved remote root of mapping 0 (what the agent reported); "~/..." in the other mappings is
// resolved against the home derived from it. With `workspace_relative`, local roots inside the
// project are written as ${workspaceFolder}/... (for a launch.json in the project's .vscode).
std::expected<std::vector<PathMapping>, std::string> resolve_path_mappings(const deploy::ProjectConfig& config,
                                                                          std::string_view first_remote_root,
                                                                          bool workspace_relative = false);

struct AttachOptions {
  int port = 5678;                 // the local end of the tunnel to debugpy
  std::string name;                // default: "ferry: attach (<project>)"
  bool legacy_type = false;        // "type": "python" for the old Python extension
  bool just_my_code = true;
};

nlohmann::json vscode_attach_configuration(const deploy::ProjectConfig& config, const std::vector<PathMapping>& mappings,
                                           const AttachOptions& options);

}  // namespace ferry::debug

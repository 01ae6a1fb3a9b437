// Where a project's mapping goes, decided in one place for the CLI commands and `ferry serve`:
// the sync target (local folder, remote path, excludes, protected paths) and, on the `local`
// host, the sandbox agent's options ("~" is the sandbox, an absolute remote path is used as it is).
#pragma once

#include "helper/deploy/project_config.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/sync/sync_engine.hpp"

namespace ferry::sync {

// remote_base is set only on the local host, where the mapping lies below the sandbox's root;
// over SSH the agent's root is the mapping itself.
SyncTarget mapping_target(const deploy::ProjectConfig& project, const deploy::Mapping& mapping);

// Paths named on a command line (`ferry sync PATH...`, an IDE's File Watcher passing the saved
// file), absolute or relative to `cwd`, as paths relative to the mapping's local root for
// SyncOptions::only_paths. Each path's parent is resolved (the project may sit behind a
// symlink); its last component is not, so a symlink is synced as the link it is.
struct MappingPaths {
  std::vector<std::string> inside;   // relative to local_root
  std::vector<std::string> outside;  // as given: not under local_root (or the root itself)
};
MappingPaths paths_in_mapping(const std::filesystem::path& local_root, const std::vector<std::string>& paths,
                              const std::filesystem::path& cwd);

// For host "local": the LocalEndpoint that serves mapping_target(project, mapping).
remote::LocalEndpointOptions local_endpoint_options(const deploy::ProjectConfig& project, const deploy::Mapping& mapping);

}  // namespace ferry::sync

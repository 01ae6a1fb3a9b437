// Where a project's mappings go, decided in one place for the CLI commands and `ferry serve`:
// the sync targets (local folder, remote path, excludes, protected paths), one per mapping over
// the project's one endpoint, which paths belong to which mapping, and, on the `local` host, the
// sandbox agent's options ("~" is the sandbox, an absolute remote path is used as it is).
#pragma once

#include <expected>
#include <optional>

#include "helper/deploy/project_config.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/sync/sync_engine.hpp"

namespace ferry::sync {

// remote_base is set only on the local host, where the mapping lies below the sandbox's root;
// over SSH the agent's root is the mapping itself.
SyncTarget mapping_target(const deploy::ProjectConfig& project, const deploy::Mapping& mapping);

// Every mapping's target, in ferry.json's order, all served by the agent the first mapping roots
// (project_endpoint.hpp): [0] is the first mapping, runs' working root. Another mapping whose
// remote is not below that root gets an absolute or "~/" base, which the agent opens as a root
// of its own. A mapping whose folder holds another's leaves that folder to it (`nested`), so
// every file belongs to exactly one mapping: the deepest one holding it.
std::vector<SyncTarget> mapping_targets(const deploy::ProjectConfig& project);

// The mapping (index into `targets`) that holds the absolute local `path`, and the path
// relative to its folder; nullopt when no mapping holds it (or it is a mapping's folder itself).
struct MappedPath {
  std::size_t mapping = 0;
  std::string rel;
};
std::optional<MappedPath> mapping_of(const std::vector<SyncTarget>& targets, const std::filesystem::path& path);

// Paths a request names "relative to the mapping" (sync/pull, sync/push, `ferry pull`), one list
// per mapping. With one mapping they are its own, as they are. With several they are relative to
// the project root, as the folders lie locally ("data-scripts/out.csv"): each goes to the mapping
// holding it, and a path holding whole mappings ("." holds them all) names each of them whole.
// Unexpected: the paths in no mapping, as the message to show.
std::expected<std::vector<std::vector<std::string>>, std::string> paths_by_mapping(const deploy::ProjectConfig& project,
                                                                                  const std::vector<SyncTarget>& targets,
                                                                                  const std::vector<std::string>& paths);

// How several mappings' summaries read as one (sync/push, `ferry sync --json`): counts and
// seconds summed; paths in conflicts, held deletes and unstable files (and each error's start)
// prefixed with `prefix` (the mapping's local folder and '/', "" for the project root).
void add_summary(SyncSummary& total, const SyncSummary& part, const std::string& prefix);
// "src/" for a mapping of "src", "" for ".": what add_summary prefixes with.
std::string mapping_prefix(const deploy::Mapping& mapping);

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
// The same over every mapping: each path goes to the mapping holding it (mapping_of).
struct MappingsPaths {
  std::vector<std::vector<std::string>> inside;  // per target, relative to its local_root
  std::vector<std::string> outside;              // as given: in no mapping
};
MappingsPaths paths_in_mappings(const std::vector<SyncTarget>& targets, const std::vector<std::string>& paths,
                                const std::filesystem::path& cwd);

// For host "local": the LocalEndpoint that serves mapping_target(project, mapping).
remote::LocalEndpointOptions local_endpoint_options(const deploy::ProjectConfig& project, const deploy::Mapping& mapping);

}  // namespace ferry::sync

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

// For host "local": the LocalEndpoint that serves mapping_target(project, mapping).
remote::LocalEndpointOptions local_endpoint_options(const deploy::ProjectConfig& project, const deploy::Mapping& mapping);

}  // namespace ferry::sync

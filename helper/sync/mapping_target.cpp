// A mapping's sync target and local-host endpoint options: see mapping_target.hpp.
#include "helper/sync/mapping_target.hpp"

namespace ferry::sync {

SyncTarget mapping_target(const deploy::ProjectConfig& project, const deploy::Mapping& mapping) {
  SyncTarget t;
  std::error_code ec;
  t.local_root = std::filesystem::weakly_canonical(project.root / mapping.local, ec);
  t.host = project.host;
  t.remote_root = mapping.remote;
  t.exclude = project.exclude;
  t.protect = project.protect;
  if (project.host == "local" && !mapping.remote.starts_with("/")) {
    const std::string& r = mapping.remote;
    t.remote_base = r.starts_with("~") ? r.substr(r.size() > 1 ? 2 : 1) : r;
  }
  return t;
}

remote::LocalEndpointOptions local_endpoint_options(const deploy::ProjectConfig& project, const deploy::Mapping& mapping) {
  remote::LocalEndpointOptions o;
  o.project_name = project.name;
  if (mapping.remote.starts_with("/")) o.root = mapping.remote;
  return o;
}

}  // namespace ferry::sync

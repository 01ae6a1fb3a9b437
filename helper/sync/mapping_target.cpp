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

MappingPaths paths_in_mapping(const std::filesystem::path& local_root, const std::vector<std::string>& paths,
                              const std::filesystem::path& cwd) {
  namespace fs = std::filesystem;
  MappingPaths out;
  for (const auto& given : paths) {
    fs::path p = fs::path(given).is_absolute() ? fs::path(given) : cwd / given;
    p = p.lexically_normal();
    if (!p.has_filename()) p = p.parent_path();  // "dir/" names dir
    std::error_code ec;
    const fs::path parent = fs::weakly_canonical(p.parent_path(), ec);
    const std::string rel = ec ? std::string() : (parent / p.filename()).lexically_relative(local_root).generic_string();
    if (rel.empty() || rel == "." || rel == ".." || rel.starts_with("../")) out.outside.push_back(given);
    else out.inside.push_back(rel);
  }
  return out;
}

remote::LocalEndpointOptions local_endpoint_options(const deploy::ProjectConfig& project, const deploy::Mapping& mapping) {
  remote::LocalEndpointOptions o;
  o.project_name = project.name;
  if (mapping.remote.starts_with("/")) o.root = mapping.remote;
  return o;
}

}  // namespace ferry::sync

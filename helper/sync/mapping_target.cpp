// Mappings' sync targets, which mapping a path is in, local-host endpoint options: see mapping_target.hpp.
#include "helper/sync/mapping_target.hpp"

#include <algorithm>

#include "common/path_within.hpp"

namespace ferry::sync {

namespace fs = std::filesystem;

namespace {

// "./a//b/" -> "a/b", "" -> ".": how mapping folders and request paths are compared.
std::string clean(std::string_view path) {
  std::string s = fs::path(path).lexically_normal().generic_string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s.empty() ? std::string(".") : s;
}

bool at_or_under(std::string_view path, std::string_view dir) {
  return path.starts_with(dir) && (path.size() == dir.size() || path[dir.size()] == '/');
}

// The base of a mapping other than the first, for the agent the first one roots: below that
// root when the root is the local sandbox and the mapping lies in it, else the mapping's own
// directory (absolute, or "~/..." expanded by the agent on its host).
std::string other_mapping_base(const deploy::ProjectConfig& project, const deploy::Mapping& m) {
  const std::string& r = m.remote;
  if (project.host != "local" || r.starts_with("/")) return r;
  const std::string below = r.substr(r.size() > 1 ? 2 : 1);  // "~/x" -> "x": in the sandbox
  if (!project.mappings.front().remote.starts_with("/")) return below;  // the agent's root is the sandbox
  return (remote::default_sandbox_root(project.name) / below).lexically_normal().string();
}

// A command-line path as the absolute path it names: its parent resolved (the project may sit
// behind a symlink), its last component not (a symlink is synced as the link it is). Empty when
// its parent cannot be resolved.
fs::path named_path(const std::string& given, const fs::path& cwd) {
  fs::path p = fs::path(given).is_absolute() ? fs::path(given) : cwd / given;
  p = p.lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "dir/" names dir
  std::error_code ec;
  const fs::path parent = fs::weakly_canonical(p.parent_path(), ec);
  return ec ? fs::path() : parent / p.filename();
}

}  // namespace

std::vector<SyncTarget> mapping_targets(const deploy::ProjectConfig& project) {
  std::vector<SyncTarget> out;
  const auto& ms = project.mappings;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    SyncTarget t = mapping_target(project, ms[i]);
    if (i > 0) t.remote_base = other_mapping_base(project, ms[i]);
    for (std::size_t j = 0; j < ms.size(); ++j)
      if (auto rel = deploy::path_in_mapping(ms[j].local, ms[i]); j != i && rel) t.nested.push_back(clean(*rel));
    out.push_back(std::move(t));
  }
  return out;
}

std::optional<MappedPath> mapping_of(const std::vector<SyncTarget>& targets, const fs::path& path) {
  std::optional<MappedPath> best;
  std::size_t best_depth = 0;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const std::string rel = posix::relative_to(path.lexically_normal(), targets[i].local_root).generic_string();
    if (rel.empty() || rel == "." || rel == ".." || rel.starts_with("../")) continue;
    const std::size_t depth = targets[i].local_root.string().size();
    if (!best || depth > best_depth) best = MappedPath{i, rel}, best_depth = depth;
  }
  // Only a nested mapping's folder itself can be left at its outer mapping: it is neither's file.
  if (best && std::ranges::find(targets[best->mapping].nested, best->rel) != targets[best->mapping].nested.end()) return std::nullopt;
  return best;
}

std::expected<std::vector<std::vector<std::string>>, std::string> paths_by_mapping(const deploy::ProjectConfig& project,
                                                                                  const std::vector<SyncTarget>& targets,
                                                                                  const std::vector<std::string>& paths) {
  std::vector<std::vector<std::string>> out(targets.size());
  if (targets.size() == 1) {
    out.front() = paths;
    return out;
  }
  std::string lost;
  for (const auto& given : paths) {
    const std::string p = clean(given);
    bool placed = false;
    for (std::size_t i = 0; i < targets.size() && i < project.mappings.size(); ++i) {
      const std::string local = clean(project.mappings[i].local);
      if (p == "." || at_or_under(local, p)) {  // the whole mapping
        out[i].push_back(".");
        placed = true;
        continue;
      }
      auto rel = deploy::path_in_mapping(p, project.mappings[i]);
      if (!rel || std::ranges::any_of(targets[i].nested, [&](const std::string& d) { return at_or_under(*rel, d); })) continue;
      out[i].push_back(*rel);
      placed = true;
    }
    if (!placed) lost += (lost.empty() ? "'" : ", '") + given + "'";
  }
  if (lost.empty()) return out;
  std::string folders;
  for (const auto& m : project.mappings) folders += (folders.empty() ? "" : ", ") + clean(m.local);
  return std::unexpected(lost + " in no mapping: with several mappings, paths are relative to the project root and start with "
                                "a mapping's folder (" + folders + "), or are \".\" for all");
}

std::string mapping_prefix(const deploy::Mapping& mapping) {
  const std::string local = clean(mapping.local);
  return local == "." ? std::string() : local + "/";
}

void add_summary(SyncSummary& total, const SyncSummary& part, const std::string& prefix) {
  total.files_sent += part.files_sent;
  total.files_deleted += part.files_deleted;
  total.bytes_literal += part.bytes_literal;
  total.bytes_matched += part.bytes_matched;
  total.bytes_on_wire += part.bytes_on_wire;
  total.dirs_made += part.dirs_made;
  total.metadata_only += part.metadata_only;
  total.unchanged += part.unchanged;
  total.seconds += part.seconds;
  total.dry_run = total.dry_run || part.dry_run;
  total.cancelled = total.cancelled || part.cancelled;
  for (auto c : part.conflicts) {
    c.path = prefix + c.path;
    total.conflicts.push_back(std::move(c));
  }
  for (const auto& p : part.held_deletes) total.held_deletes.push_back(prefix + p);
  for (const auto& p : part.unstable) total.unstable.push_back(prefix + p);
  for (const auto& e : part.errors) total.errors.push_back(prefix.empty() ? e : prefix + ": " + e);
  // The widest read of any mapping says how the push read the local side.
  if (part.local_scan == "full" || total.local_scan.empty()) total.local_scan = part.local_scan;
  if (total.full_walk_reason.empty()) total.full_walk_reason = part.full_walk_reason;
  if (!total.no_space) total.no_space = part.no_space;
}

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
  MappingPaths out;
  for (const auto& given : paths) {
    const fs::path named = named_path(given, cwd);
    const std::string rel = named.empty() ? std::string() : posix::relative_to(named, local_root).generic_string();
    if (rel.empty() || rel == "." || rel == ".." || rel.starts_with("../")) out.outside.push_back(given);
    else out.inside.push_back(rel);
  }
  return out;
}

MappingsPaths paths_in_mappings(const std::vector<SyncTarget>& targets, const std::vector<std::string>& paths,
                                const std::filesystem::path& cwd) {
  MappingsPaths out;
  out.inside.resize(targets.size());
  for (const auto& given : paths) {
    const fs::path named = named_path(given, cwd);
    auto in = named.empty() ? std::nullopt : mapping_of(targets, named);
    if (in) out.inside[in->mapping].push_back(in->rel);
    else out.outside.push_back(given);
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

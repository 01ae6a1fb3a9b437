// project/load: find and validate the project's ferry.json for the IDE.
#include <algorithm>
#include <system_error>

#include "helper/deploy/project_config.hpp"
#include "helper/server/project_lookup.hpp"
#include "helper/server/server.hpp"
#include "protocol/messages.hpp"
#include "protocol/messages_project.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
namespace fs = std::filesystem;

namespace {

p::ResponseError not_found(const std::string& message, const fs::path& where) {
  return p::ResponseError{p::error_code::kProjectNotFound, "project not found: " + message,
                          p::json{{"path", where.string()}}};
}

// Resolves what project/load was asked for to a ferry.json path, or explains why there is none.
std::expected<fs::path, p::ResponseError> locate(const std::optional<std::string>& requested,
                                                 const Workspace& workspace) {
  std::error_code ec;
  const ServerOptions& options = workspace.options();
  std::optional<fs::path> explicit_path;
  if (requested)
    explicit_path = fs::path(*requested);
  else if (options.project_dir)
    explicit_path = *options.project_dir;

  if (!explicit_path) {
    const fs::path start = workspace.default_start();
    auto found = deploy::find_project_file(start);
    if (!found)
      return std::unexpected(not_found(std::string("no ") + deploy::kProjectFileName + " in " + start.string() +
                                           " or any parent directory",
                                       start));
    return *found;
  }
  fs::path path = explicit_path->is_absolute() ? *explicit_path : options.cwd / *explicit_path;
  if (!fs::exists(path, ec)) return std::unexpected(not_found(path.string() + " does not exist", path));
  if (fs::is_directory(path, ec)) {
    if (!fs::is_regular_file(path / deploy::kProjectFileName, ec))
      return std::unexpected(not_found(std::string("no ") + deploy::kProjectFileName + " in " + path.string(), path));
    return path / deploy::kProjectFileName;
  }
  return path;
}

std::expected<deploy::ProjectConfig, p::ResponseError> load(const fs::path& file) {
  auto config = deploy::load_project(file);
  if (!config) {
    const auto& e = config.error();
    return std::unexpected(p::ResponseError{p::error_code::kProjectInvalid, "invalid project config: " + e.to_string(),
                                            p::json{{"pointer", e.pointer}, {"file", e.file}}});
  }
  return std::move(*config);
}

}  // namespace

void Workspace::set_folders(std::vector<fs::path> folders) {
  std::lock_guard lock(mutex_);
  folders_ = std::move(folders);
}

void Workspace::add_folder(const fs::path& folder) {
  std::lock_guard lock(mutex_);
  if (std::find(folders_.begin(), folders_.end(), folder) == folders_.end()) folders_.push_back(folder);
}

void Workspace::remove_folder(const fs::path& folder) {
  std::lock_guard lock(mutex_);
  std::erase(folders_, folder);
}

std::vector<fs::path> Workspace::folders() const {
  std::lock_guard lock(mutex_);
  return folders_;
}

fs::path Workspace::default_start() const {
  if (options_.project_dir) return *options_.project_dir;
  std::lock_guard lock(mutex_);
  return folders_.empty() ? options_.cwd : folders_.front();
}

std::expected<deploy::ProjectConfig, p::ResponseError> lookup_project(const std::optional<std::string>& path,
                                                                      const Workspace& workspace) {
  auto file = locate(path, workspace);
  if (!file) return std::unexpected(file.error());
  return load(*file);
}

std::expected<deploy::ProjectConfig, p::ResponseError> project_of_file(const fs::path& file) {
  auto found = deploy::find_project_file(file);
  if (!found)
    return std::unexpected(not_found(std::string("no ") + deploy::kProjectFileName + " above " + file.string(), file));
  return load(*found);
}

void bind_project_methods(p::BindingTable& table, const Workspace& workspace) {
  table.request<p::ProjectLoadParams, p::ProjectLoadResult>(
      p::method::kProjectLoad,
      [&workspace](const p::ProjectLoadParams& params, p::CallContext&) -> std::expected<p::ProjectLoadResult, p::ResponseError> {
        auto config = lookup_project(params.path, workspace);
        if (!config) return std::unexpected(config.error());
        return p::ProjectLoadResult{deploy::to_json(*config)};
      },
      p::Execution::worker);
  table.reserve_name("project/trust");  // server -> client (trust_gate.hpp)
}

}  // namespace ferry::server

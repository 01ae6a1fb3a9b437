// project/load: find and validate the project's ferry.json for the IDE.
#include <system_error>

#include "helper/deploy/project_config.hpp"
#include "helper/server/project_lookup.hpp"
#include "helper/server/server.hpp"
#include "protocol/messages.hpp"

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
                                                 const ServerOptions& options) {
  std::error_code ec;
  std::optional<fs::path> explicit_path;
  if (requested)
    explicit_path = fs::path(*requested);
  else if (options.project_dir)
    explicit_path = *options.project_dir;

  if (!explicit_path) {
    auto found = deploy::find_project_file(options.cwd);
    if (!found)
      return std::unexpected(not_found(std::string("no ") + deploy::kProjectFileName + " in " + options.cwd.string() +
                                           " or any parent directory",
                                       options.cwd));
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

}  // namespace

std::expected<deploy::ProjectConfig, p::ResponseError> lookup_project(const std::optional<std::string>& path,
                                                                      const ServerOptions& options) {
  auto file = locate(path, options);
  if (!file) return std::unexpected(file.error());
  auto config = deploy::load_project(*file);
  if (!config) {
    const auto& e = config.error();
    return std::unexpected(p::ResponseError{p::error_code::kProjectInvalid, "invalid project config: " + e.to_string(),
                                            p::json{{"pointer", e.pointer}, {"file", e.file}}});
  }
  return std::move(*config);
}

void bind_project_methods(p::BindingTable& table, const ServerOptions& options) {
  table.request<p::ProjectLoadParams, p::json>(
      p::method::kProjectLoad,
      [&options](const p::ProjectLoadParams& params, p::CallContext&) -> std::expected<p::json, p::ResponseError> {
        auto config = lookup_project(params.path, options);
        if (!config) return std::unexpected(config.error());
        return deploy::to_json(*config);
      },
      p::Execution::worker);
}

}  // namespace ferry::server

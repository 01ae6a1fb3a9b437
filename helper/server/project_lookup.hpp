// Which project a request is about. The workspace is what the editor opened (initialize's
// rootUri / workspaceFolders, later workspace/didChangeWorkspaceFolders) or --project; a request
// names a project by its ferry.json or directory, a document by its path, or nothing (the
// workspace's first project). Errors are -32099 (none found) / -32098 (invalid).
#pragma once

#include <expected>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "helper/deploy/project_config.hpp"
#include "helper/server/server.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::server {

class Workspace {
 public:
  explicit Workspace(const ServerOptions& options) : options_(options) {}

  const ServerOptions& options() const { return options_; }
  void set_folders(std::vector<std::filesystem::path> folders);
  void add_folder(const std::filesystem::path& folder);
  void remove_folder(const std::filesystem::path& folder);
  std::vector<std::filesystem::path> folders() const;
  // Where a request that names no project starts looking: --project, else the first folder,
  // else the server's cwd.
  std::filesystem::path default_start() const;

 private:
  const ServerOptions& options_;
  mutable std::mutex mutex_;
  std::vector<std::filesystem::path> folders_;
};

// `path`: a ferry.json or a directory holding one; nullopt: the workspace's default project.
std::expected<deploy::ProjectConfig, protocol::ResponseError> lookup_project(const std::optional<std::string>& path,
                                                                             const Workspace& workspace);

// The project a file belongs to: the nearest ferry.json above it.
std::expected<deploy::ProjectConfig, protocol::ResponseError> project_of_file(const std::filesystem::path& file);

}  // namespace ferry::server

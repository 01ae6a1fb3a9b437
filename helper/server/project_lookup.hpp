// Finding and validating the project a request is about (project/load, host/connect): the
// explicit path, else --project, else a walk up from the cwd; errors as -32099 / -32098.
#pragma once

#include <expected>
#include <optional>
#include <string>

#include "helper/deploy/project_config.hpp"
#include "helper/server/server.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::server {

std::expected<deploy::ProjectConfig, protocol::ResponseError> lookup_project(const std::optional<std::string>& path,
                                                                             const ServerOptions& options);

}  // namespace ferry::server

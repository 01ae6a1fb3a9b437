// What every part of `ferry serve` shares: the options it was started with, the editor's
// workspace, the projects' links, the questions to the person and the client connection.
#pragma once

#include "helper/server/client_questions.hpp"
#include "helper/server/project_lookup.hpp"
#include "helper/server/project_session.hpp"
#include "helper/server/server.hpp"
#include "protocol/outgoing_requests.hpp"

namespace ferry::server {

struct ServerContext {
  const ServerOptions& options;
  Workspace& workspace;
  ProjectSessions& sessions;
  ClientQuestions& questions;
  protocol::OutgoingRequests& client;

  // The project `path` names (nullopt: the workspace's), linked.
  std::expected<ProjectLinkPtr, protocol::ResponseError> link(const std::optional<std::string>& path,
                                                              const protocol::CancellationToken& cancel = {},
                                                              const ProjectSessions::Report& report = {}) const {
    auto config = lookup_project(path, workspace);
    if (!config) return std::unexpected(config.error());
    return sessions.link(*config, cancel, report);
  }
};

}  // namespace ferry::server

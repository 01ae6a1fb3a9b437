// debug/prepare's service, also used by the ferry.debug command (lsp_commands.cpp).
#pragma once

#include <expected>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "helper/debug/debugpy_command.hpp"
#include "helper/server/server_context.hpp"
#include "protocol/binding_table.hpp"

namespace ferry::server {

struct DebugPrepareParams {
  std::optional<std::string> path;        // the project, as for project/load
  std::vector<std::string> command;       // script and args, or -m MODULE ...
  int port = debug::kDefaultDebugpyPort;  // debugpy's port on the box
  std::optional<int> local_port;          // the tunnel's port here; default `port`, 0 any
  std::map<std::string, std::string> env;
  std::string cwd;
  bool legacy_type = false;
  bool just_my_code = true;
  int wait = 30;
};

struct DebugPrepareResult {
  protocol::json configuration;
  std::string run_id;
  int local_port = 0;
};

class DebugSessions;
std::shared_ptr<DebugSessions> make_debug_sessions(const ServerContext& ctx);
std::expected<DebugPrepareResult, protocol::ResponseError> prepare_debug(DebugSessions& sessions,
                                                                         const DebugPrepareParams& params,
                                                                         const protocol::CancellationToken& cancel);
void bind_debug_methods(protocol::BindingTable& table, std::shared_ptr<DebugSessions> sessions);

}  // namespace ferry::server

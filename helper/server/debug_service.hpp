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
#include "protocol/messages_tunnel.hpp"

namespace ferry::server {

using protocol::DebugPrepareParams;
using protocol::DebugPrepareResult;
static_assert(protocol::kDefaultDebugpyPort == debug::kDefaultDebugpyPort);

class DebugSessions;
std::shared_ptr<DebugSessions> make_debug_sessions(const ServerContext& ctx);
std::expected<DebugPrepareResult, protocol::ResponseError> prepare_debug(DebugSessions& sessions,
                                                                         const DebugPrepareParams& params,
                                                                         const protocol::CancellationToken& cancel);
void bind_debug_methods(protocol::BindingTable& table, std::shared_ptr<DebugSessions> sessions);

}  // namespace ferry::server

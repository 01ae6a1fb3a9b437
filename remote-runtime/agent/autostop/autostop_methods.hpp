// autostop/set, autostop/cancel, autostop/status on the agent: arm, disarm and inspect the
// watchdog (watchdog.hpp) whose state lives in STATE/autostop/.
#pragma once

#include <optional>

#include "protocol/binding_table.hpp"
#include "protocol/jsonrpc.hpp"
#include "remote-runtime/agent/autostop/autostop_state.hpp"

namespace ferry::agent::autostop {

// nullopt for any other method.
std::optional<protocol::Response> handle_autostop_method(const protocol::Request& request, const Paths& paths);

// Binds autostop/set, autostop/cancel and autostop/status into the agent's table (raw params).
void bind_autostop_methods(protocol::BindingTable& table, const Paths& paths);

// {armed, settings?, watchdog: {running, status?}, lastEvent?}: also what autostop/set answers.
json status_json(const Paths& paths);

}  // namespace ferry::agent::autostop

// A project link's state as host/stateChanged carries it ("connecting", "connected",
// "reconnecting", "disconnected"): the one place its words are spelled. Code compares the enum.
#pragma once

#include <string_view>

namespace ferry::protocol {

enum class LinkState { connecting, connected, reconnecting, disconnected, unknown };

std::string_view to_string(LinkState s);
LinkState link_state_from_string(std::string_view s);  // unknown for any other word

}  // namespace ferry::protocol

// A project link's state as host/stateChanged carries it ("connecting", "connected",
// "reconnecting", "disconnected"), and a tunnel's on that link as tunnel/list carries it
// ("active", "waiting"): the one place their words are spelled. Code compares the enums.
#pragma once

#include <string_view>

namespace ferry::protocol {

enum class LinkState { connecting, connected, reconnecting, disconnected, unknown };

std::string_view to_string(LinkState s);
LinkState link_state_from_string(std::string_view s);  // unknown for any other word

// A forward is waiting while its link is down (or its listener could not start there), and is
// started again after the reconnect.
enum class ForwardState { active, waiting };

std::string_view to_string(ForwardState s);

}  // namespace ferry::protocol

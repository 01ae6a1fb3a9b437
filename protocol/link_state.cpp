// LinkState's words: see link_state.hpp.
#include "protocol/link_state.hpp"

namespace ferry::protocol {

std::string_view to_string(LinkState s) {
  switch (s) {
    case LinkState::connecting: return "connecting";
    case LinkState::connected: return "connected";
    case LinkState::reconnecting: return "reconnecting";
    case LinkState::disconnected: return "disconnected";
    case LinkState::unknown: break;
  }
  return "unknown";
}

std::string_view to_string(ForwardState s) { return s == ForwardState::active ? "active" : "waiting"; }

LinkState link_state_from_string(std::string_view s) {
  for (auto state : {LinkState::connecting, LinkState::connected, LinkState::reconnecting, LinkState::disconnected})
    if (s == to_string(state)) return state;
  return LinkState::unknown;
}

}  // namespace ferry::protocol

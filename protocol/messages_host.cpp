// Typed host/disconnect messages: see messages_host.hpp.
#include "protocol/messages_host.hpp"

#include "protocol/messages.hpp"

namespace ferry::protocol {

json to_json(const HostDisconnectResult& r) { return {{"host", r.host}, {"disconnected", r.disconnected}}; }

std::optional<DecodeError> from_json(const json& j, HostDisconnectResult& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("host", out.host);
  r.required("disconnected", out.disconnected);
  return r.error();
}

json to_json(const ConfirmHostKeyResult& r) { return {{"accept", r.accept}}; }

}  // namespace ferry::protocol

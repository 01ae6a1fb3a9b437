// The agent's tcp/* params: see messages_tcp.hpp.
#include "protocol/messages_tcp.hpp"

namespace ferry::protocol {

std::optional<DecodeError> from_json(const json& j, TcpConnectParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("host", out.host);
  r.required("port", out.port);
  r.check(out.port > 0 && out.port < 65536, "port", "port must be from 1 to 65535");
  return r.error();
}

json to_json(const TcpConnectParams& p) { return json{{"host", p.host}, {"port", p.port}}; }

json to_json(const TcpConnectResult& r) { return json{{"id", r.id}}; }

std::optional<DecodeError> from_json(const json& j, TcpConnectResult& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("id", out.id);
  return r.error();
}

std::optional<DecodeError> from_json(const json& j, TcpListenParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("host", out.host);
  r.required("port", out.port);
  r.check(out.port >= 0 && out.port < 65536, "port", "port must be from 0 to 65535");
  r.check(out.host == "127.0.0.1" || out.host == "localhost" || out.host == "::1", "host",
          "a tunnel listens on loopback only: 127.0.0.1, localhost or ::1");
  return r.error();
}

json to_json(const TcpListenParams& p) { return json{{"host", p.host}, {"port", p.port}}; }

json to_json(const TcpListenResult& r) { return json{{"listenerId", r.listener_id}, {"port", r.port}}; }

std::optional<DecodeError> from_json(const json& j, TcpListenResult& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("listenerId", out.listener_id);
  r.required("port", out.port);
  return r.error();
}

json to_json(const TcpAcceptedParams& p) { return json{{"listenerId", p.listener_id}, {"id", p.id}}; }

std::optional<DecodeError> from_json(const json& j, TcpAcceptedParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("listenerId", out.listener_id);
  r.required("id", out.id);
  return r.error();
}

json to_json(const TcpUnlistenParams& p) { return json{{"listenerId", p.listener_id}}; }

std::optional<DecodeError> from_json(const json& j, TcpUnlistenParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("listenerId", out.listener_id);
  return r.error();
}

std::optional<DecodeError> from_json(const json& j, TcpDataParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("id", out.id);
  if (auto e = r.error()) return e;
  auto it = j.find("data");
  if (it == j.end() || !it->is_binary()) return DecodeError{pointer_append(ptr, "data"), "expected bytes"};
  out.data = it->get_binary();
  return std::nullopt;
}

json tcp_data_params(std::int64_t id, const std::uint8_t* data, std::size_t size) {
  return json{{"id", id}, {"data", json::binary(std::vector<std::uint8_t>(data, data + size))}};
}

std::optional<DecodeError> from_json(const json& j, TcpAckParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("id", out.id);
  r.required("bytes", out.bytes);
  r.check(out.bytes >= 0, "bytes", "bytes must not be negative");
  return r.error();
}

json to_json(const TcpAckParams& p) { return json{{"id", p.id}, {"bytes", p.bytes}}; }

std::optional<DecodeError> from_json(const json& j, TcpIdParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("id", out.id);
  return r.error();
}

json to_json(const TcpIdParams& p) { return json{{"id", p.id}}; }

}  // namespace ferry::protocol

// Tunnel spec parsing and wording (forward_spec.hpp).
#include "helper/remote/forward_spec.hpp"

#include <charconv>
#include <vector>

namespace ferry::remote {
namespace {

constexpr std::string_view kGrammar = "expected PORT, LPORT:HOST:RPORT or ADDR:LPORT:HOST:RPORT";

// Splits on ':' outside brackets; brackets are dropped ([::1] -> ::1).
std::expected<std::vector<std::string>, std::string> split_fields(std::string_view text) {
  std::vector<std::string> out(1);
  bool bracket = false;
  for (char c : text) {
    if (c == '[' && !bracket && out.back().empty()) bracket = true;
    else if (c == ']' && bracket) bracket = false;
    else if (c == ':' && !bracket) out.emplace_back();
    else out.back() += c;
  }
  if (bracket) return std::unexpected("unclosed '[' in " + std::string(text));
  return out;
}

std::expected<int, std::string> parse_port(const std::string& field, bool allow_zero, std::string_view what) {
  int value = -1;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || ec != std::errc{} || end != field.data() + field.size() || value < (allow_zero ? 0 : 1) ||
      value > 65535)
    return std::unexpected(std::string(what) + " '" + field + "' is not a port number (" + (allow_zero ? "0" : "1") +
                           " to 65535)");
  return value;
}

std::string with_port(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace

bool is_loopback_address(std::string_view address) {
  return address == "127.0.0.1" || address == "localhost" || address == "::1";
}

std::expected<void, std::string> validate_forward_spec(const ForwardSpec& spec) {
  if (!is_loopback_address(spec.bind_address)) {
    int port = spec.kind == ForwardKind::kLocal ? spec.local_port : spec.remote_port;
    return std::unexpected("ferry binds tunnels to loopback only: anyone on your network could reach " +
                           with_port(spec.bind_address.empty() ? "*" : spec.bind_address, port) +
                           " and through it " + (spec.kind == ForwardKind::kLocal ? "the remote box" : "this machine") +
                           "; use 127.0.0.1");
  }
  auto bad = [](int p, bool zero) { return p < (zero ? 0 : 1) || p > 65535; };
  bool local = spec.kind == ForwardKind::kLocal;
  if (bad(spec.local_port, local)) return std::unexpected("local port " + std::to_string(spec.local_port) + " is out of range");
  if (bad(spec.remote_port, !local)) return std::unexpected("remote port " + std::to_string(spec.remote_port) + " is out of range");
  if (local && spec.remote_host.empty()) return std::unexpected("the remote host is empty");
  if (!local && spec.local_host.empty()) return std::unexpected("the local host is empty");
  return {};
}

std::expected<ForwardSpec, std::string> parse_forward_spec(std::string_view text, ForwardKind kind) {
  auto fields = split_fields(text);
  if (!fields) return std::unexpected(fields.error());
  auto& f = *fields;
  ForwardSpec spec;
  spec.kind = kind;
  bool local = kind == ForwardKind::kLocal;
  std::size_t at = 0;
  if (f.size() == 4) {
    spec.bind_address = f[0];
    if (spec.bind_address == "*" || spec.bind_address.empty()) spec.bind_address = "*";
    at = 1;
  } else if (f.size() != 1 && f.size() != 3) {
    return std::unexpected("'" + std::string(text) + "': " + std::string(kGrammar));
  }
  auto listen = parse_port(f[at], true, local ? "local port" : "remote port");
  if (!listen) return std::unexpected(listen.error());
  int target_port = *listen;
  std::string target_host = local ? "localhost" : "127.0.0.1";
  if (f.size() > 1) {
    target_host = f[at + 1];
    if (target_host.empty()) return std::unexpected("'" + std::string(text) + "': the host is empty");
    auto t = parse_port(f[at + 2], false, local ? "remote port" : "local port");
    if (!t) return std::unexpected(t.error());
    target_port = *t;
  } else if (target_port == 0) {
    return std::unexpected("'" + std::string(text) + "': port 0 needs the target spelled out (0:localhost:8888)");
  }
  if (local) {
    spec.local_port = *listen;
    spec.remote_host = target_host;
    spec.remote_port = target_port;
  } else {
    spec.remote_port = *listen;
    spec.local_host = target_host;
    spec.local_port = target_port;
  }
  if (auto ok = validate_forward_spec(spec); !ok) return std::unexpected(ok.error());
  return spec;
}

ForwardSpec forward_spec_from(const deploy::TunnelSpec& t) {
  ForwardSpec spec;
  spec.name = t.name;
  spec.kind = t.kind == "reverse" ? ForwardKind::kReverse : ForwardKind::kLocal;
  spec.local_port = t.local_port;
  spec.remote_port = t.remote_port;
  if (spec.kind == ForwardKind::kLocal) spec.remote_host = t.remote_host;
  return spec;
}

std::string describe(const ForwardInfo& info) {
  const auto& s = info.spec;
  if (s.kind == ForwardKind::kLocal)
    return with_port(s.bind_address, info.bound_port ? info.bound_port : s.local_port) + " → remote " +
           with_port(s.remote_host, s.remote_port);
  return "remote " + with_port(s.bind_address, info.bound_port ? info.bound_port : s.remote_port) + " → " +
         with_port(s.local_host, s.local_port) + " here";
}

protocol::TunnelInfo tunnel_info(const ForwardInfo& info) {
  const auto& s = info.spec;
  const bool local = s.kind == ForwardKind::kLocal;
  protocol::TunnelInfo t;
  t.id = info.id;
  t.local = local;
  t.name = s.name;
  t.bind_address = s.bind_address;
  t.local_port = local ? info.bound_port : s.local_port;
  t.remote_port = local ? s.remote_port : info.bound_port;
  t.remote_host = s.remote_host;
  t.local_host = s.local_host;
  t.state = protocol::to_string(info.state);
  t.error = info.error;
  t.accepted = info.accepted;
  t.live = info.live;
  t.description = describe(info);
  return t;
}

protocol::json to_json(const ForwardInfo& info) { return protocol::to_json(tunnel_info(info)); }

std::expected<ForwardSpec, std::string> forward_spec_from_json(const protocol::json& p) {
  if (!p.is_object()) return std::unexpected("params: expected an object");
  ForwardSpec spec;
  auto str = [&](const char* key, std::string& out) -> std::expected<void, std::string> {
    if (auto it = p.find(key); it != p.end()) {
      if (!it->is_string() || it->get<std::string>().empty()) return std::unexpected(std::string(key) + ": expected a non-empty string");
      out = it->get<std::string>();
    }
    return {};
  };
  auto port = [&](const char* key, int& out, bool required) -> std::expected<void, std::string> {
    auto it = p.find(key);
    if (it == p.end()) {
      if (required) return std::unexpected(std::string(key) + ": required");
      return {};
    }
    if (!it->is_number_integer() || it->get<long long>() < 0 || it->get<long long>() > 65535)
      return std::unexpected(std::string(key) + ": expected a port number from 0 to 65535");
    out = it->get<int>();
    return {};
  };
  std::string kind = "local";
  for (auto r : {str("kind", kind), str("name", spec.name), str("bindAddress", spec.bind_address),
                 str("remoteHost", spec.remote_host), str("localHost", spec.local_host)})
    if (!r) return std::unexpected(r.error());
  if (kind != "local" && kind != "reverse") return std::unexpected("kind: expected \"local\" or \"reverse\"");
  spec.kind = kind == "local" ? ForwardKind::kLocal : ForwardKind::kReverse;
  bool local = spec.kind == ForwardKind::kLocal;
  if (auto r = port("remotePort", spec.remote_port, true); !r) return std::unexpected(r.error());
  spec.local_port = spec.remote_port;  // as in ferry.json; an explicit localPort 0 asks for an ephemeral port
  if (auto r = port("localPort", spec.local_port, !local && spec.remote_port == 0); !r) return std::unexpected(r.error());
  if (auto ok = validate_forward_spec(spec); !ok) return std::unexpected(ok.error());
  return spec;
}

protocol::json forward_spec_json(const ForwardSpec& spec) {
  const bool local = spec.kind == ForwardKind::kLocal;
  protocol::json j{{"kind", local ? "local" : "reverse"},
                   {"bindAddress", spec.bind_address},
                   {"localPort", spec.local_port},
                   {"remotePort", spec.remote_port}};
  if (!spec.name.empty()) j["name"] = spec.name;
  if (local) j["remoteHost"] = spec.remote_host;
  else j["localHost"] = spec.local_host;
  return j;
}

}  // namespace ferry::remote

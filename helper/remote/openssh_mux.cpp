// The mux messages ferry speaks to the OpenSSH tunnel master, and the master's argv: see
// openssh_mux.hpp. The master itself (a process and a Unix socket) is in posix/openssh_master.cpp.
#include "helper/remote/openssh_mux.hpp"

#include <cstring>

namespace ferry::remote {
namespace fs = std::filesystem;

namespace mux {
namespace {

void put_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void put_string(std::string& out, std::string_view s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

std::string packet(const std::string& body) {
  std::string out;
  put_u32(out, static_cast<std::uint32_t>(body.size()));
  return out + body;
}

// Reads SSH wire values off the front of a body.
struct Reader {
  std::string_view rest;
  std::optional<std::uint32_t> u32() {
    if (rest.size() < 4) return std::nullopt;
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(rest[i]);
    rest.remove_prefix(4);
    return v;
  }
  std::optional<std::string> string() {
    auto n = u32();
    if (!n || rest.size() < *n) return std::nullopt;
    std::string s(rest.substr(0, *n));
    rest.remove_prefix(*n);
    return s;
  }
};

}  // namespace

std::string hello_packet() {
  std::string body;
  put_u32(body, kHello);
  put_u32(body, kVersion);
  return packet(body);
}

std::string stdio_forward_packet(std::uint32_t request_id, std::string_view host, std::uint32_t port) {
  std::string body;
  put_u32(body, kNewStdioForward);
  put_u32(body, request_id);
  put_string(body, "");  // reserved
  put_string(body, host);
  put_u32(body, port);
  return packet(body);
}

std::expected<std::optional<Message>, std::string> take_message(std::string& buffer) {
  Reader head{buffer};
  auto length = head.u32();
  if (!length) return std::nullopt;
  if (*length > kMaxPacket) return std::unexpected("a mux packet of " + std::to_string(*length) + " bytes");
  if (head.rest.size() < *length) return std::nullopt;
  Reader body{head.rest.substr(0, *length)};
  Message m;
  auto type = body.u32();
  auto id = body.u32();
  if (!type || !id) return std::unexpected(std::string("a mux packet too short for its type"));
  m.type = *type;
  m.id = *id;
  if (m.type == kFailure || m.type == kPermissionDenied) m.reason = body.string().value_or("");
  buffer.erase(0, 4 + *length);
  return m;
}

}  // namespace mux

std::vector<std::string> openssh_mux_argv(const OpenSshLaneSpec& spec, std::string_view key_type, const fs::path& control_path) {
  auto argv = openssh_client_argv(spec, key_type);
  // -N: no command, -n: stdin from /dev/null. The LocalCommand runs once the master listens on
  // its control socket, so its line on our pipe says "ready" without polling for the socket.
  for (std::string o : {std::string("ControlMaster=yes"), "ControlPath=" + control_path.string(), std::string("ControlPersist=no"),
                        std::string("PermitLocalCommand=yes"), "LocalCommand=echo " + std::string(kMuxReadyLine)}) {
    argv.push_back("-o");
    argv.push_back(std::move(o));
  }
  argv.insert(argv.end(), {"-N", "-n", "--", spec.host.hostname});
  return argv;
}

}  // namespace ferry::remote

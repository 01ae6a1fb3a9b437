// CBOR agent wire codec: see agent_wire.hpp.
#include "protocol/agent_wire.hpp"

#include <charconv>

namespace ferry::protocol {
namespace {

// nlohmann's CBOR reader recurses once per nesting level, so a hostile body of a few MB of
// nested-array bytes would overflow the stack. This SAX front stops the parse past kMaxDepth.
inline constexpr std::size_t kMaxDepth = 128;

class DepthLimitedSax {
 public:
  explicit DepthLimitedSax(json& root) : dom_(root, /*allow_exceptions=*/false) {}
  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const std::string& s) { return dom_.number_float(v, s); }
  bool string(std::string& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) { return enter() && dom_.start_object(n); }
  bool key(std::string& k) { return dom_.key(k); }
  bool end_object() { --depth_; return dom_.end_object(); }
  bool start_array(std::size_t n) { return enter() && dom_.start_array(n); }
  bool end_array() { --depth_; return dom_.end_array(); }
  bool parse_error(std::size_t pos, const std::string& token, const nlohmann::detail::exception& e) {
    error_ = e.what();
    return dom_.parse_error(pos, token, e);
  }
  bool too_deep() const { return too_deep_; }
  const std::string& error() const { return error_; }

 private:
  bool enter() {
    if (++depth_ > kMaxDepth) {
      too_deep_ = true;
      return false;
    }
    return true;
  }
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::size_t depth_ = 0;
  bool too_deep_ = false;
  std::string error_;
};

std::unexpected<InvalidMessage> bad_body(std::string message) {
  return std::unexpected(
      InvalidMessage{nullptr, ResponseError{error_code::kParseError, std::move(message), std::nullopt}});
}

}  // namespace

std::string encode_agent_frame(const Message& message) {
  std::vector<std::uint8_t> cbor = json::to_cbor(to_json(message));
  return encode_frame(std::string_view(reinterpret_cast<const char*>(cbor.data()), cbor.size()));
}

std::expected<Message, InvalidMessage> decode_agent_body(std::string_view body) {
  // No exceptions escape: a peer's bytes must never crash either end.
  json j;
  DepthLimitedSax sax(j);
  bool ok = false;
  try {
    ok = json::sax_parse(body.begin(), body.end(), &sax, json::input_format_t::cbor, /*strict=*/true);
  } catch (const std::exception& e) {
    return bad_body(std::string("agent frame body is not valid CBOR: ") + e.what());
  }
  if (sax.too_deep())
    return bad_body("agent frame body nests deeper than " + std::to_string(kMaxDepth) + " levels");
  if (!ok || j.is_discarded()) {
    return bad_body("agent frame body is not valid CBOR (" + std::to_string(body.size()) + " bytes)" +
                    (sax.error().empty() ? "" : ": " + sax.error()));
  }
  return parse_message(j);
}

std::string agent_magic_line(int protocol_version, std::string_view agent_version) {
  std::string s(kAgentMagicPrefix);
  s += std::to_string(protocol_version);
  s += ' ';
  s += agent_version;
  return s;
}

std::expected<AgentMagic, std::string> parse_agent_magic(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!line.starts_with(kAgentMagicPrefix)) return std::unexpected("not a FERRY-AGENT line");
  std::string_view rest = line.substr(kAgentMagicPrefix.size());
  auto space = rest.find(' ');
  std::string_view proto = rest.substr(0, space);
  std::string_view version = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
  int n = 0;
  auto [p, ec] = std::from_chars(proto.data(), proto.data() + proto.size(), n);
  if (proto.empty() || ec != std::errc{} || p != proto.data() + proto.size() || n < 0)
    return std::unexpected("bad protocol number '" + std::string(proto.substr(0, 20)) + "' in the agent's magic line");
  if (version.empty() || version.find(' ') != std::string_view::npos)
    return std::unexpected("bad agent version in the magic line '" + std::string(line.substr(0, 80)) + "'");
  return AgentMagic{n, std::string(version)};
}

std::optional<std::expected<MagicScan, std::string>> scan_agent_preamble(std::string_view bytes,
                                                                         std::size_t max_preamble) {
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    auto nl = bytes.find('\n', pos);
    if (nl == std::string_view::npos) break;
    std::string_view line = bytes.substr(pos, nl - pos);
    // The magic may follow noise printed without a newline (a prompt), so look inside the line.
    if (auto at = line.find(kAgentMagicPrefix); at != std::string_view::npos) {
      auto magic = parse_agent_magic(line.substr(at));
      if (!magic) return std::unexpected(magic.error());
      return MagicScan{std::move(*magic), nl + 1};
    }
    pos = nl + 1;
  }
  if (bytes.size() > max_preamble)
    return std::unexpected("no FERRY-AGENT line within the first " + std::to_string(max_preamble) +
                           " bytes of the agent's output (is something printing on login?)");
  return std::nullopt;
}

}  // namespace ferry::protocol

// CBOR agent wire codec: see agent_wire.hpp.
#include "protocol/agent_wire.hpp"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

namespace ferry::protocol {
namespace {

// nlohmann's CBOR reader recurses once per nesting level, so a hostile body of a few MB of
// nested-array bytes would overflow the stack. This SAX front stops the parse past kMaxDepth.
inline constexpr std::size_t kMaxDepth = 128;
// Byte strings of this size or more are moved into the parsed document, not copied (a pulled or
// pushed 8 MiB chunk); below it one copy costs less than the walk that moves them.
inline constexpr std::size_t kMoveInAbove = 64u << 10;
inline constexpr std::uint64_t kPlaceholderSubtype = 0xfe77'0000;

class DepthLimitedSax {
 public:
  explicit DepthLimitedSax(json& root) : dom_(root, /*allow_exceptions=*/false) {}
  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const std::string& s) { return dom_.number_float(v, s); }
  bool string(std::string& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) {
    // A byte string taken out while the frame arrived (owned_), or lifted out before the parse
    // (lift_byte_strings), is put back here. nlohmann's DOM builder copies the bytes it is
    // given, so a big one gets a marked empty placeholder now and its bytes are moved into the
    // finished document by move_big_strings_in.
    std::optional<std::vector<std::uint8_t>> big;
    if (owned_ && owned_->index == binaries_) {
      big = std::move(owned_->bytes);
      owned_.reset();
    } else if (next_lifted_ < lifted_.size() && lifted_[next_lifted_].index == binaries_) {
      const auto& l = lifted_[next_lifted_++];
      if (l.size >= kMoveInAbove) big.emplace(l.data, l.data + l.size);
      else v.assign(l.data, l.data + l.size);
    }
    ++binaries_;
    if (big) {
      v.clear();
      v.set_subtype(kPlaceholderSubtype + big_.size());  // CBOR tags are refused: no peer string has a subtype
      big_.push_back(std::move(*big));
    }
    return dom_.binary(v);
  }
  // Moves the big byte strings into their placeholders in the parsed document.
  void move_big_strings_in(json& j) {
    if (big_.empty()) return;
    if (j.is_binary() && j.get_binary().has_subtype() && j.get_binary().subtype() >= kPlaceholderSubtype) {
      auto& b = j.get_binary();
      const std::uint64_t k = b.subtype() - kPlaceholderSubtype;
      if (k < big_.size()) static_cast<std::vector<std::uint8_t>&>(b) = std::move(big_[k]);
      b.clear_subtype();
    } else if (j.is_structured()) {
      for (auto& child : j) move_big_strings_in(child);
    }
  }
  struct Lifted {
    std::size_t index;  // among the body's byte strings, in document order
    const std::uint8_t* data;
    std::size_t size;
  };
  void set_lifted(std::vector<Lifted> l) { lifted_ = std::move(l); }
  void set_owned(OwnedByteString o) { owned_ = std::move(o); }
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
  std::vector<Lifted> lifted_;
  std::optional<OwnedByteString> owned_;
  std::vector<std::vector<std::uint8_t>> big_;  // by placeholder subtype
  std::size_t next_lifted_ = 0, binaries_ = 0;
  std::size_t depth_ = 0;
  bool too_deep_ = false;
  std::string error_;
};

// nlohmann's CBOR reader copies a byte string one byte at a time, with a bounds check per byte:
// for the file data of sync requests that was the agent's largest CPU cost. So byte strings of
// kLiftAbove bytes or more are lifted out: the parser gets a copy of the body with each replaced
// by an empty byte string, and DepthLimitedSax::binary puts the bytes back (one memcpy). The
// walk only needs item boundaries; anything it does not expect (indefinite lengths, truncation,
// nesting past kMaxDepth) returns nullopt and the body is parsed as it came, so every error is
// still nlohmann's. 64 bytes, not a few KiB: an initial sync's small files (a few KiB each)
// were still copied byte by byte, ~7% of a 20k-file sync's time; below 64 bytes (hashes) the
// lift's own bookkeeping would cost more than it saves.
inline constexpr std::size_t kLiftAbove = 64;

struct LiftedBody {
  std::vector<std::uint8_t> body;
  std::vector<DepthLimitedSax::Lifted> lifted;
};

// One CBOR item head at `pos`: major type, argument, and where the head began; nullopt past
// the end or for what the walk leaves to nlohmann (indefinite lengths, reserved values).
struct Head {
  unsigned major;
  std::uint64_t arg;
  std::size_t at;
};
std::optional<Head> read_head(const std::uint8_t* p, std::size_t n, std::size_t& pos) {
  if (pos >= n) return std::nullopt;
  const std::size_t at = pos;
  const std::uint8_t head = p[pos++];
  const unsigned major = head >> 5, info = head & 0x1f;
  std::uint64_t arg = info;
  if (info >= 24 && info <= 27) {
    const std::size_t len = std::size_t{1} << (info - 24);
    if (n - pos < len) return std::nullopt;
    arg = 0;
    for (std::size_t i = 0; i < len; ++i) arg = (arg << 8) | p[pos + i];
    pos += len;
  } else if (info > 27) {
    return std::nullopt;
  }
  return Head{major, arg, at};
}

// Walks the items of one CBOR value in p[0, n), calling on_bytes(head, index, data) for each byte
// string (index: among the byte strings, in document order; data: the offset of its first byte),
// which returns true to stop the walk there. `whole`: p holds the whole value, so every string
// and every container's items must fit in it; else p is the value's first bytes. Returns where the
// walk stopped (the value's end, or the string on_bytes stopped at), nullopt for what it leaves
// to nlohmann (indefinite lengths, truncation, nesting past kMaxDepth).
template <class OnBytes>
std::optional<std::size_t> walk_cbor(const std::uint8_t* p, std::size_t n, bool whole, OnBytes&& on_bytes) {
  std::size_t pos = 0, binaries = 0;
  // Items still to read at each open level (a map of k pairs counts 2k).
  std::vector<std::uint64_t> pending{1};
  while (!pending.empty()) {
    if (pending.back() == 0) {
      pending.pop_back();
      continue;
    }
    --pending.back();
    const auto h = read_head(p, n, pos);
    if (!h) return std::nullopt;
    const std::uint64_t arg = h->arg;
    switch (h->major) {
      case 0: case 1: case 7: break;  // integers, simple values and floats: the argument is all
      case 2: case 3:
        if (h->major == 2 && on_bytes(*h, binaries++, pos)) return pos;
        if (arg > n - pos) return std::nullopt;
        pos += static_cast<std::size_t>(arg);
        break;
      case 4: case 5: {
        if (pending.size() > kMaxDepth) return std::nullopt;
        // Whole: each item takes at least a byte. A prefix: only no overflow.
        if (whole ? arg > n : arg > std::numeric_limits<std::uint64_t>::max() / 2) return std::nullopt;
        const std::uint64_t items = h->major == 5 ? arg * 2 : arg;
        if (whole && items > n - pos) return std::nullopt;
        pending.push_back(items);
        break;
      }
      case 6: pending.back() += 1; break;  // a tag: its content follows
      default: return std::nullopt;
    }
  }
  return pos;
}

std::optional<LiftedBody> lift_byte_strings(std::string_view in) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(in.data());
  const std::size_t n = in.size();
  LiftedBody out;
  std::size_t copied = 0;
  const auto end = walk_cbor(p, n, true, [&](const Head& h, std::size_t index, std::size_t data) {
    if (h.arg >= kLiftAbove && h.arg <= n - data) {
      out.body.insert(out.body.end(), p + copied, p + h.at);
      out.body.push_back(0x40);  // an empty byte string
      out.lifted.push_back({index, p + data, static_cast<std::size_t>(h.arg)});
      copied = data + static_cast<std::size_t>(h.arg);
    }
    return false;
  });
  if (!end || out.lifted.empty()) return std::nullopt;
  out.body.insert(out.body.end(), p + copied, p + n);  // trailing bytes too: nlohmann's strict mode rejects them
  return out;
}

std::unexpected<InvalidMessage> bad_body(std::string message) {
  return std::unexpected(
      InvalidMessage{nullptr, ResponseError{error_code::kParseError, std::move(message), std::nullopt}});
}

}  // namespace

namespace {

// Collects the CBOR body as runs of `buffer` and, for big strings, pieces that point into the
// json being written (nlohmann writes a string's bytes with one write_characters call).
class PieceWriter : public nlohmann::detail::output_adapter_protocol<std::uint8_t> {
 public:
  struct Piece {
    const std::uint8_t* external = nullptr;  // null: a run of the buffer from `offset`
    std::size_t offset = 0, size = 0;
  };
  // Runs start at `from` (the header's room comes before it).
  PieceWriter(std::vector<std::uint8_t>& buffer, std::size_t from) : buffer_(buffer), run_start_(from) {}
  void write_character(std::uint8_t c) override { buffer_.push_back(c); }
  void write_characters(const std::uint8_t* s, std::size_t n) override {
    if (n < kFramePieceAbove) {
      buffer_.insert(buffer_.end(), s, s + n);
      return;
    }
    close_run();
    pieces_.push_back({s, 0, n});
  }
  // The body's pieces in order.
  std::vector<Piece> finish() {
    close_run();
    return std::move(pieces_);
  }

 private:
  void close_run() {
    if (buffer_.size() > run_start_) pieces_.push_back({nullptr, run_start_, buffer_.size() - run_start_});
    run_start_ = buffer_.size();
  }
  std::vector<std::uint8_t>& buffer_;
  std::size_t run_start_;
  std::vector<Piece> pieces_;
};

// "Content-Length: " + up to 20 digits + "\r\n\r\n".
constexpr std::size_t kHeaderRoom = 48;

}  // namespace

std::size_t AgentFrame::size() const {
  std::size_t n = 0;
  for (auto p : pieces_) n += p.size();
  return n;
}

std::string AgentFrame::bytes() const {
  std::string out;
  out.reserve(size());
  for (auto p : pieces_) out += p;
  return out;
}

namespace {

// The frame's pieces into `buffer` (header included) and into `value`'s big strings.
std::vector<std::string_view> encode_pieces(const json& value, std::vector<std::uint8_t>& buffer) {
  buffer.reserve(4096);
  buffer.resize(kHeaderRoom);
  auto writer = std::make_shared<PieceWriter>(buffer, kHeaderRoom);
  nlohmann::detail::binary_writer<json, std::uint8_t>(writer).write_cbor(value);
  const auto pieces = writer->finish();
  std::size_t body = 0;
  for (const auto& p : pieces) body += p.size;
  const std::string header = "Content-Length: " + std::to_string(body) + "\r\n\r\n";
  const std::size_t begin = kHeaderRoom - header.size();
  std::memcpy(buffer.data() + begin, header.data(), header.size());
  std::vector<std::string_view> views;
  views.reserve(pieces.size() + 1);
  const auto* base = reinterpret_cast<const char*>(buffer.data());
  views.emplace_back(base + begin, header.size());
  for (const auto& p : pieces) {
    if (p.external) views.emplace_back(reinterpret_cast<const char*>(p.external), p.size);
    else if (p.offset == kHeaderRoom) views.back() = std::string_view(base + begin, header.size() + p.size);  // joined to the header
    else views.emplace_back(base + p.offset, p.size);
  }
  return views;
}

}  // namespace

AgentFrame encode_agent_frame_buffer(const json& value) {
  std::vector<std::uint8_t> buffer;
  auto pieces = encode_pieces(value, buffer);
  return AgentFrame(std::move(buffer), std::move(pieces));
}

AgentFrame encode_agent_frame_buffer(Message&& message) {
  json value = to_json(std::move(message));
  std::vector<std::uint8_t> buffer;
  auto pieces = encode_pieces(value, buffer);
  return AgentFrame(std::move(buffer), std::move(pieces), std::move(value));  // moving keeps its strings where they are
}

std::string encode_agent_value_frame(const json& value) { return encode_agent_frame_buffer(value).bytes(); }

std::string encode_agent_frame(const Message& message) { return encode_agent_value_frame(to_json(message)); }

namespace {

std::expected<json, InvalidMessage> decode_value(std::string_view body, std::optional<OwnedByteString> owned) {
  // No exceptions escape: a peer's bytes must never crash either end.
  json j;
  DepthLimitedSax sax(j);
  if (owned) sax.set_owned(std::move(*owned));
  bool ok = false;
  try {
    if (auto lifted = lift_byte_strings(body)) {
      sax.set_lifted(std::move(lifted->lifted));
      // As chars: nlohmann 3.11.2 reads unsigned char iterators through std::char_traits<unsigned
      // char>, which libc++ 19 (macOS's) no longer has (scripts/check_libcxx.sh).
      const auto* first = reinterpret_cast<const char*>(lifted->body.data());
      ok = json::sax_parse(first, first + lifted->body.size(), &sax, json::input_format_t::cbor, /*strict=*/true);
    } else {
      ok = json::sax_parse(body.begin(), body.end(), &sax, json::input_format_t::cbor, /*strict=*/true);
    }
  } catch (const std::exception& e) {
    return bad_body(std::string("agent frame body is not valid CBOR: ") + e.what());
  }
  if (sax.too_deep())
    return bad_body("agent frame body nests deeper than " + std::to_string(kMaxDepth) + " levels");
  if (!ok || j.is_discarded()) {
    return bad_body("agent frame body is not valid CBOR (" + std::to_string(body.size()) + " bytes)" +
                    (sax.error().empty() ? "" : ": " + sax.error()));
  }
  sax.move_big_strings_in(j);
  return j;
}

}  // namespace

std::expected<json, InvalidMessage> decode_agent_value(std::string_view body) { return decode_value(body, std::nullopt); }

std::expected<Message, InvalidMessage> decode_agent_body(std::string_view body) {
  auto j = decode_value(body, std::nullopt);
  if (!j) return std::unexpected(std::move(j.error()));
  return parse_message(std::move(*j));
}

std::optional<ByteStringAt> find_byte_string(std::string_view body_prefix, std::size_t at_least) {
  std::optional<ByteStringAt> found;
  walk_cbor(reinterpret_cast<const std::uint8_t*>(body_prefix.data()), body_prefix.size(), false, [&](const Head& h, std::size_t index, std::size_t data) {
    if (h.arg >= at_least) found = ByteStringAt{index, h.at, data, static_cast<std::size_t>(h.arg)};
    return found.has_value();
  });
  return found;
}

std::expected<Message, InvalidMessage> decode_agent_body(std::string_view body, OwnedByteString owned) {
  auto j = decode_value(body, std::move(owned));
  if (!j) return std::unexpected(std::move(j.error()));
  return parse_message(std::move(*j));
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

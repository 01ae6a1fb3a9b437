// The helper <-> agent wire: JSON-RPC messages encoded as CBOR inside LSP frames, plus the
// magic line the agent prints before the first frame. Pure codec: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/framing.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::protocol {

// File bytes travel in agent frames, so the cap is far above the IDE wire's.
inline constexpr std::size_t kMaxAgentBody = 256u << 20;
inline constexpr std::string_view kAgentMagicPrefix = "FERRY-AGENT ";
// Login banners and .bashrc noise before the magic line are skipped up to this many bytes.
inline constexpr std::size_t kMaxAgentPreamble = 64u << 10;

inline FrameLimits agent_frame_limits() { return FrameLimits{kMaxAgentBody, kMaxHeaderBytes}; }

// One encoded frame: the header and the CBOR body as pieces to write in order. Big strings
// (a chunk of a file) are not copied into the frame: their pieces point into the json it was
// encoded from, which the frame holds when it was given one to move, and which the caller keeps
// alive otherwise. (The body as one buffer copied each 8 MiB chunk once more, into fresh pages:
// on a VM with costly page faults, a tenth of the agent's CPU on a pull.)
class AgentFrame {
 public:
  // What the pieces point into; `kept` is held for moved messages.
  AgentFrame(std::vector<std::uint8_t> buffer, std::vector<std::string_view> pieces, json kept = nullptr)
      : buffer_(std::move(buffer)), pieces_(std::move(pieces)), kept_(std::move(kept)) {}
  // Movable: the pieces point into heap arrays (buffer_'s, the json's strings) that moves keep.
  const std::vector<std::string_view>& pieces() const { return pieces_; }
  std::size_t size() const;
  // The pieces joined (a copy), for tests and small frames.
  std::string bytes() const;

 private:
  std::vector<std::uint8_t> buffer_;
  std::vector<std::string_view> pieces_;
  json kept_;
};

// Strings of this many bytes or more stay in the json, pointed to by their own piece.
inline constexpr std::size_t kFramePieceAbove = 64u << 10;

AgentFrame encode_agent_frame_buffer(const json& value);
// Moves the message's params or result into the frame's JSON instead of copying them.
AgentFrame encode_agent_frame_buffer(Message&& message);

// Encodes one message as a CBOR body inside an LSP frame.
std::string encode_agent_frame(const Message& message);

// The same for a message (or batch) already shaped as JSON, as the Dispatcher sends it.
std::string encode_agent_value_frame(const json& value);

// Decodes one frame body (CBOR) into a JSON value, for the Dispatcher's handle_value. Bad CBOR
// (or nesting too deep) yields a parse error with a null id.
std::expected<json, InvalidMessage> decode_agent_value(std::string_view body);

// Decodes one frame body (CBOR) into a message. Errors carry the id when one could be read,
// as parse_message does; bad CBOR yields a parse error with a null id.
std::expected<Message, InvalidMessage> decode_agent_body(std::string_view body);

// A big byte string of a frame whose body is still arriving (a pulled chunk), found in the
// body's first bytes: a reader can take its bytes from the stream straight into a buffer of
// their own (FrameDecoder::divert) instead of through the frame buffer, and hand that buffer to
// decode_agent_body, so the chunk is not copied between the channel and the file.
struct ByteStringAt {
  std::size_t index = 0;   // among the body's byte strings, in document order
  std::size_t header = 0;  // body offset of its CBOR head
  std::size_t data = 0;    // body offset of its first byte
  std::size_t size = 0;
};
// The first byte string of `at_least` bytes or more whose head lies in `body_prefix`; nullopt
// when there is none there, or when the prefix holds anything the lifting walk does not expect.
std::optional<ByteStringAt> find_byte_string(std::string_view body_prefix, std::size_t at_least);
// A byte string taken out of the body (its head replaced by an empty byte string) and kept here.
struct OwnedByteString {
  std::size_t index = 0;  // as ByteStringAt::index
  std::vector<std::uint8_t> bytes;
};
// decode_agent_body for a body whose byte string `owned.index` was taken out: the message gets
// `owned.bytes` there, moved, not copied.
std::expected<Message, InvalidMessage> decode_agent_body(std::string_view body, OwnedByteString owned);

// The agent's first line on stdout, without the trailing newline.
std::string agent_magic_line(int protocol_version, std::string_view agent_version);

struct AgentMagic {
  int protocol_version = 0;
  std::string agent_version;
};

// Parses a line starting with "FERRY-AGENT " (trailing "\r" tolerated).
std::expected<AgentMagic, std::string> parse_agent_magic(std::string_view line);

// Finds the magic line in bytes read so far from the agent's stdout, skipping noise lines.
// Returns the magic and the offset just past its newline, nullopt when more bytes are needed,
// or an error once more than max_preamble bytes arrived without a magic line.
struct MagicScan {
  AgentMagic magic;
  std::size_t consumed = 0;
};
std::optional<std::expected<MagicScan, std::string>> scan_agent_preamble(
    std::string_view bytes, std::size_t max_preamble = kMaxAgentPreamble);

}  // namespace ferry::protocol

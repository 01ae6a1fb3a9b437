// Fuzzes the agent wire as either end reads it: the magic-line preamble scan, LSP frames with the
// agent's cap, CBOR bodies into JSON-RPC messages, and the helper's way of taking a frame's big
// byte string out as it arrives (FrameDecoder::divert). Decoded messages must re-encode and
// decode to the same CBOR bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/agent_wire.hpp"

using namespace ferry::protocol;

namespace {

void check_round_trip(const Message& m) {
  std::string frame = encode_agent_frame(m);
  FrameDecoder decoder(agent_frame_limits());
  decoder.feed(frame);
  auto body = decoder.next();
  if (!body || !body->has_value()) std::abort();
  auto again = decode_agent_body(**body);
  if (!again) std::abort();
  if (json::to_cbor(to_json(*again)) != json::to_cbor(to_json(m))) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);

  // The body alone, as a frame's content.
  if (auto m = decode_agent_body(input)) check_round_trip(*m);

  // The whole stream: preamble, then frames fed in uneven chunks.
  std::string_view rest = input;
  if (auto scan = scan_agent_preamble(input, 4096); scan && scan->has_value()) rest = input.substr((*scan)->consumed);
  FrameDecoder decoder(FrameLimits{1u << 20, kMaxHeaderBytes});
  std::size_t chunk = size % 7 + 1;
  for (std::size_t pos = 0; pos < rest.size(); pos += chunk) {
    decoder.feed(rest.substr(pos, chunk));
    while (auto frame = decoder.next()) {
      if (!*frame) {
        if (frame->error().fatal) return 0;
        continue;
      }
      if (auto m = decode_agent_body(**frame)) check_round_trip(*m);
    }
  }

  // The same stream as AgentLink reads it: a frame's byte string (8 bytes or more here, 1 MiB
  // there) taken out as the frame arrives and read into a buffer of its own, then moved in.
  FrameDecoder taking(FrameLimits{1u << 20, kMaxHeaderBytes});
  std::optional<OwnedByteString> owned;
  std::size_t have = 0;
  for (std::size_t pos = 0; pos < rest.size();) {
    if (owned && have < owned->bytes.size()) {
      const std::size_t n = std::min({chunk, owned->bytes.size() - have, rest.size() - pos});
      std::memcpy(owned->bytes.data() + have, rest.data() + pos, n);
      have += n, pos += n;
      continue;
    }
    const std::size_t n = std::min(chunk, rest.size() - pos);
    taking.feed(rest.substr(pos, n));
    pos += n;
    while (auto frame = taking.next_view()) {
      auto mine = std::exchange(owned, std::nullopt);
      if (!*frame) {
        if (frame->error().fatal) return 0;
        continue;
      }
      auto m = mine ? decode_agent_body(**frame, std::move(*mine)) : decode_agent_body(**frame);
      if (m) check_round_trip(*m);
    }
    auto body = owned ? std::nullopt : taking.body_in_progress();
    if (!body || body->diverted) continue;
    auto at = find_byte_string(body->so_far.substr(0, 4096), 8);
    if (!at || at->size > body->length - std::min(at->data, body->length)) continue;
    std::vector<std::uint8_t> bytes(at->size);
    if (auto got = taking.divert(at->header, at->data, at->size, '\x40', reinterpret_cast<char*>(bytes.data()))) {
      owned = OwnedByteString{at->index, std::move(bytes)};
      have = *got;
    }
  }
  return 0;
}

// Fuzzes the agent wire as either end reads it: the magic-line preamble scan, LSP frames with the
// agent's cap, CBOR bodies into JSON-RPC messages. Decoded messages must re-encode and decode to
// the same CBOR bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

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
  return 0;
}

// Fuzzes the delta codec as the agent meets it: a hostile delta (fed whole and in chunks) against
// a base, and a hostile signature the helper might be sent. Nothing may read or write out of
// bounds; any delta that applies must produce exactly its declared size and hash, and a delta
// generated from any valid signature must reproduce the new data or fail the hash check.
//
// Input: u16 LE base length, u8 chunk size, base bytes, then the rest is the delta/signature.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "protocol/delta/delta.hpp"
#include "protocol/delta/patch.hpp"
#include "protocol/delta/signature.hpp"

using namespace ferry::delta;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::size_t base_len = std::min<std::size_t>(data[0] | (data[1] << 8), size - 3);
  const std::size_t chunk = 1 + data[2];
  const Bytes base(data + 3, base_len);
  const Bytes rest(data + 3 + base_len, size - 3 - base_len);
  constexpr std::uint64_t kCap = 1u << 20;

  // 1. One-shot apply into a vector sized from the (capped) header.
  auto whole = apply_delta(base, rest, kCap);
  if (whole) {
    const auto header = read_delta_header(rest);
    if (!header || whole->size() != header->output_size || hash128(*whole) != header->output_hash) std::abort();
  }

  // 2. The streaming patcher, fed in small chunks, must agree with the one-shot result.
  std::vector<std::uint8_t> streamed;
  bool too_big = false;
  Patcher patcher(base, [&](Bytes b) {
    if (streamed.size() + b.size() > kCap) {
      too_big = true;
      return false;
    }
    streamed.insert(streamed.end(), b.begin(), b.end());
    return true;
  });
  std::expected<void, DeltaError> ok;
  for (std::size_t at = 0; at < rest.size() && ok; at += chunk) {
    ok = patcher.feed(rest.subspan(at, std::min(chunk, rest.size() - at)));
  }
  if (ok) ok = patcher.finish();
  if (!too_big && ok.has_value() != whole.has_value()) std::abort();
  if (whole && ok && streamed != *whole) std::abort();

  // 3. The same bytes as a signature: if it parses, a delta made from it must round-trip or
  //    be caught by the whole-file hash.
  auto sig = SignatureView::parse(rest);
  if (sig && sig->file_size() == base.size() && sig->block_count() < 4096) {
    std::vector<std::uint8_t> delta;
    const Bytes next(data, std::min<std::size_t>(size, 4096));
    if (generate_delta(*sig, next, delta)) {
      auto out = apply_delta(base, delta, kCap);
      if (out && *out != std::vector<std::uint8_t>(next.begin(), next.end())) std::abort();
      if (!out && out.error().code != DeltaErrc::hash_mismatch) std::abort();
    }
  }
  return 0;
}

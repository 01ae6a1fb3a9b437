// The zstd codec of sync payloads (file bytes, deltas, read chunks travel as one zstd frame in
// a CBOR byte string), shared by the helper and the agent so both ends agree on its limits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <vector>

namespace ferry::protocol {

// Largest decompressed payload one sync request or reply may carry (a hostile size field cannot
// make the receiver allocate more).
inline constexpr std::size_t kMaxSyncPayload = 256u << 20;
// zstd's level for payloads when the sender has no better idea.
inline constexpr int kPayloadLevel = 3;

// zstd's fastest level: on data that does not compress it still makes a valid frame (raw
// blocks) at near-copy speed.
inline constexpr int kIncompressibleLevel = -20;

// `level`, unless a 64 KiB sample of `data` does not compress (below 3 %: media, archives,
// checkpoints of random-looking floats); then kIncompressibleLevel. Small payloads keep `level`.
int payload_level_for(const std::uint8_t* data, std::size_t size, int level);

// One zstd frame of `size` bytes (empty on a zstd failure, which only a failed allocation causes).
// A context per thread: a fresh one per call costs its table setup for every small file.
std::vector<std::uint8_t> compress_payload(const std::uint8_t* data, std::size_t size, int level = kPayloadLevel);
// The same, compressed in `scratch` (kept by the caller for the next one) and copied out at its
// size: no zeroed bound-sized vector faulted in per call (8 MiB for each streamed chunk).
std::vector<std::uint8_t> compress_payload(const std::uint8_t* data, std::size_t size, int level,
                                           std::vector<std::uint8_t>& scratch);

// A frame back to exactly `expected` bytes; refuses frames that claim (or turn out) another
// size, and sizes over `limit`.
std::expected<std::vector<std::uint8_t>, std::string> decompress_payload(const std::uint8_t* data, std::size_t size,
                                                                         std::uint64_t expected,
                                                                         std::uint64_t limit = kMaxSyncPayload);
// The same into `out` (resized to `expected`): a caller that keeps `out` for the next payload
// reuses its pages, where a fresh 8 MiB vector is zeroed and faulted in again each time (on a
// VM with shadow page tables that was a tenth of a pull's CPU).
std::expected<void, std::string> decompress_payload_into(const std::uint8_t* data, std::size_t size, std::uint64_t expected,
                                                         std::vector<std::uint8_t>& out, std::uint64_t limit = kMaxSyncPayload);
// The raw bytes a payload stands for: the payload itself when `stored` (it must be exactly
// `expected` bytes long), else its zstd frame decompressed into `scratch`. The span points into
// `data` or `scratch`.
std::expected<std::span<const std::uint8_t>, std::string> payload_bytes(std::span<const std::uint8_t> data, bool stored,
                                                                       std::uint64_t expected, std::vector<std::uint8_t>& scratch,
                                                                       std::uint64_t limit = kMaxSyncPayload);

}  // namespace ferry::protocol

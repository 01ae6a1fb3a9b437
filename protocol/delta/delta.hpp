// Delta generation: the ops (COPY from the base, LITERAL bytes) that turn a base into a new
// file, found by a greedy rolling-checksum match (FORMAT.md, "Delta"). Three entry points:
// against a peer's signature, against base bytes held locally (no signature round trip, no
// false matches), and a refinement pass for two-level syncs of very large files.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <vector>

#include "protocol/delta/delta_types.hpp"
#include "protocol/delta/parallel_signature.hpp"
#include "protocol/delta/signature.hpp"

namespace ferry::delta {

inline constexpr std::size_t kDeltaHeaderSize = 40;
inline constexpr std::size_t kMaxLiteralOp = 64u << 10;  // literals are split so readers stream
inline constexpr std::uint8_t kOpEnd = 0x00;
inline constexpr std::uint8_t kOpCopy = 0x01;
inline constexpr std::uint8_t kOpLiteral = 0x02;

struct DeltaStats {
  std::uint64_t copy_ops = 0;
  std::uint64_t literal_ops = 0;
  std::uint64_t copied_bytes = 0;
  std::uint64_t literal_bytes = 0;
};

// `new_hash` in the functions below: hash128(new_data) when the caller already has it (it read
// and hashed the data once), so a 1 GiB file is not hashed again for the header. A wrong one
// makes a delta every receiver rejects (its output fails the header's hash), never a wrong file.

// Appends to `out` a delta turning the signed base into `new_data`. A false strong-hash match
// (astronomically rare) yields a delta whose output fails the header's whole-file hash, so
// the receiver rejects it instead of writing a wrong file.
std::expected<DeltaStats, DeltaError> generate_delta(const SignatureView& signature, Bytes new_data,
                                                     std::vector<std::uint8_t>& out,
                                                     std::optional<Hash128> new_hash = std::nullopt);

// generate_delta over a file read forward through `read_at` (a window of a few blocks, at least
// `window` bytes when given) instead of bytes in memory: one sequential read, hashed on the
// way unless `new_hash` is given. Literal runs longer than the window come as several ops.
// Errors: a read that failed (sink_failed, errno's text) or a file shorter than `new_size`
// (truncated).
struct StreamedDelta {
  DeltaStats stats;
  Hash128 hash;  // of the new file, as read (or new_hash)
};
std::expected<StreamedDelta, DeltaError> generate_delta_streamed(const SignatureView& signature, const ReadAt& read_at,
                                                                std::uint64_t new_size, std::vector<std::uint8_t>& out,
                                                                std::optional<Hash128> new_hash = std::nullopt,
                                                                std::size_t window = 0);

// Appends a delta from `base` (bytes the caller holds) to `new_data`; matches are confirmed
// byte for byte. `block_size` 0 picks one from the base size.
std::expected<DeltaStats, DeltaError> generate_delta_from_base(Bytes base, Bytes new_data,
                                                               std::uint32_t block_size,
                                                               std::vector<std::uint8_t>& out,
                                                               std::optional<Hash128> new_hash = std::nullopt);

struct ByteRange {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool operator==(const ByteRange&) const = default;
};

// The base ranges no COPY of `delta` reads: what a second, finer signature should cover.
std::expected<std::vector<ByteRange>, DeltaError> unreferenced_base_ranges(Bytes delta);

// Second level of a two-level sync: re-matches every LITERAL of `coarse` against `fine`
// signatures (one block size, covering ranges of the same base) and appends the finer delta.
std::expected<DeltaStats, DeltaError> refine_delta(Bytes coarse, std::span<const SignatureView> fine,
                                                   Bytes new_data, std::vector<std::uint8_t>& out,
                                                   std::optional<Hash128> new_hash = std::nullopt);

}  // namespace ferry::delta

// Reading and applying deltas. Every byte of a delta is hostile until checked: the header must
// match the base, every COPY must lie inside the base, the output may never exceed its declared
// size, and the result must hash to the declared xxh3-128. Nothing is read or written out of
// bounds whatever the input.
#pragma once

#include <atomic>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "protocol/delta/delta_types.hpp"

namespace ferry::delta {

struct DeltaHeader {
  std::uint64_t base_size = 0;
  std::uint64_t output_size = 0;
  Hash128 output_hash{};
};

struct DeltaOp {
  enum class Kind { copy, literal } kind;
  std::uint64_t offset = 0;  // copy: where in the base
  std::uint64_t length = 0;
  Bytes data;                // literal: the bytes (a view into the delta)
};

std::expected<DeltaHeader, DeltaError> read_delta_header(Bytes delta);

// Walks the ops of a complete delta held in memory; checks encoding, not bounds (the patcher
// checks those against the real base).
class DeltaReader {
 public:
  static std::expected<DeltaReader, DeltaError> open(Bytes delta);
  const DeltaHeader& header() const { return header_; }
  // The next op, nullopt after END (and no trailing bytes), or an error.
  std::expected<std::optional<DeltaOp>, DeltaError> next();

 private:
  DeltaHeader header_;
  Bytes rest_;
  bool ended_ = false;
};

// Applies a delta that arrives in chunks of any size, passing output to `sink` as it is
// produced (literal bytes go straight through; nothing is buffered beyond an op head).
class Patcher {
 public:
  // Returns false to abort (a write error in the caller).
  using Sink = std::function<bool(Bytes)>;

  Patcher(Bytes base, Sink sink);
  ~Patcher();
  Patcher(Patcher&&) noexcept;
  Patcher& operator=(Patcher&&) noexcept;

  std::expected<void, DeltaError> feed(Bytes chunk);
  // After the last chunk: checks END was seen, the size, and the whole-output hash.
  std::expected<void, DeltaError> finish();

  // Available once the header has been fed.
  const std::optional<DeltaHeader>& header() const { return header_; }
  std::uint64_t written() const { return written_; }

 private:
  std::expected<void, DeltaError> fail(DeltaErrc code, std::string message);
  std::expected<void, DeltaError> emit(Bytes bytes);
  std::expected<std::size_t, DeltaError> parse_item(Bytes data);

  Bytes base_;
  Sink sink_;
  std::vector<std::uint8_t> head_;  // a partial header or op head
  std::optional<DeltaHeader> header_;
  std::uint64_t literal_left_ = 0;
  std::uint64_t written_ = 0;
  bool ended_ = false;
  std::optional<DeltaError> error_;
  Hash128Stream hash_;
};

// The xxh3-128 of what `delta` builds from a base of `base_size` bytes that is not in memory (a
// file): literals are hashed from the delta, copied ranges through `read`, in pieces of at most
// `piece` bytes. `read(offset, into, in_place)` fills `into` from the base at `offset` and says
// false when it cannot (the caller's I/O error or a base that shrank: sink_failed); `in_place` is
// true for a COPY whose output lands where it was read from (callers that prepared a copy of the
// base read those from it). `stop`, when it turns true, ends the walk (sink_failed, "stopped").
using BaseReader = std::function<bool(std::uint64_t offset, MutableBytes into, bool in_place)>;
std::expected<Hash128, DeltaError> hash_delta_output(Bytes delta, std::uint64_t base_size, const BaseReader& read,
                                                     const std::atomic<bool>& stop, std::size_t piece = 1u << 20);

// One-shot: applies `delta` to `base` into `output` (which must hold at least the declared
// output size; see read_delta_header). Returns the bytes written.
std::expected<std::size_t, DeltaError> apply_delta(Bytes base, Bytes delta, MutableBytes output);

// Convenience for tests and tools: the output in a new vector (size capped by `max_output`).
std::expected<std::vector<std::uint8_t>, DeltaError> apply_delta(Bytes base, Bytes delta,
                                                                std::uint64_t max_output);

}  // namespace ferry::delta

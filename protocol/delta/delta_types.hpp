// Shared vocabulary of the delta codec: byte spans, the 128-bit hash, error values and the
// little-endian/LEB128 primitives of the wire format described in FORMAT.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ferry::delta {

using Bytes = std::span<const std::uint8_t>;
using MutableBytes = std::span<std::uint8_t>;
using Hash128 = std::array<std::uint8_t, 16>;  // xxh3-128, big-endian (canonical) byte order

inline constexpr std::uint16_t kFormatVersion = 1;
inline constexpr std::array<std::uint8_t, 4> kSignatureMagic{'F', 'S', 'I', 'G'};
inline constexpr std::array<std::uint8_t, 4> kDeltaMagic{'F', 'D', 'L', 'T'};

enum class DeltaErrc {
  truncated,          // input ended inside a header or an op
  bad_magic,
  unsupported_version,
  bad_parameters,     // block size / strong length / sizes out of range
  bad_op,             // unknown opcode, zero-length op, overlong varint, trailing bytes
  base_mismatch,      // the base is not the size the delta was made against
  out_of_bounds,      // a COPY outside the base, or output beyond the declared size
  size_mismatch,      // output shorter than declared at the end
  hash_mismatch,      // output does not hash to the declared value
  sink_failed,        // the caller's sink refused the bytes
};

struct DeltaError {
  DeltaErrc code;
  std::string message;
};

std::string to_string(DeltaErrc code);

Hash128 hash128(Bytes data);

// xxh3-128 of bytes that arrive in pieces: digest() equals hash128 of their concatenation.
class Hash128Stream {
 public:
  Hash128Stream();
  ~Hash128Stream();
  Hash128Stream(Hash128Stream&&) noexcept;
  Hash128Stream& operator=(Hash128Stream&&) noexcept;
  void update(Bytes data);
  Hash128 digest() const;

 private:
  struct State;  // xxhash's state, kept out of this header
  std::unique_ptr<State> state_;
};

namespace wire {

inline void put_u16(std::vector<std::uint8_t>& out, std::uint16_t v) {
  out.push_back(static_cast<std::uint8_t>(v));
  out.push_back(static_cast<std::uint8_t>(v >> 8));
}
inline void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
inline void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
inline void put_varint(std::vector<std::uint8_t>& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(v));
}
inline std::uint16_t get_u16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}
inline std::uint32_t get_u32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
  return v;
}
inline std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

enum class VarintStatus { ok, need_more, overlong };

// Decodes a LEB128 value of at most 10 bytes that fits 64 bits; `used` is set on ok.
inline VarintStatus get_varint(Bytes in, std::uint64_t& value, std::size_t& used) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (i == 10) return VarintStatus::overlong;
    const std::uint8_t b = in[i];
    if (i == 9 && b > 1) return VarintStatus::overlong;
    v |= static_cast<std::uint64_t>(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      if (b == 0 && i > 0) return VarintStatus::overlong;  // non-canonical padding
      value = v;
      used = i + 1;
      return VarintStatus::ok;
    }
  }
  return in.size() >= 10 ? VarintStatus::overlong : VarintStatus::need_more;
}

}  // namespace wire
}  // namespace ferry::delta

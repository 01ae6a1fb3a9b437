// The weak checksum: a polynomial rolling hash over a fixed window (mod 2^64), folded to 32 bits
// through a mixer. Polynomial rather than rsync's Adler pair because it spreads short edits and
// repetitive data far better; the mixer fixes the weak low bits a power-of-two modulus leaves.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry::delta {

class RollingHash {
 public:
  static constexpr std::uint64_t kMultiplier = 0x100000001b3ull * 2 + 1;  // odd, well-mixed

  explicit RollingHash(std::size_t window) {
    // M^(window-1): weight of the byte leaving the window (by squaring: coarse windows are 1 MiB).
    std::uint64_t base = kMultiplier;
    for (std::size_t e = window > 0 ? window - 1 : 0; e > 0; e >>= 1, base *= base)
      if (e & 1) top_power_ *= base;
  }

  // Hash of a whole window, from scratch: vectorized where the CPU has AVX2 (rolling_hash.cpp),
  // the same value as compute_scalar on every path.
  static std::uint64_t compute(const std::uint8_t* data, std::size_t len);

  // The definition: sum of (byte + 1) * M^(len-1-i) mod 2^64, by Horner's rule.
  static std::uint64_t compute_scalar(const std::uint8_t* data, std::size_t len, std::uint64_t h = 0) {
    // Four bytes per step, so the multiply chain is a quarter as long (same value).
    constexpr std::uint64_t m2 = kMultiplier * kMultiplier, m3 = m2 * kMultiplier, m4 = m3 * kMultiplier;
    std::size_t i = 0;
    for (; i + 4 <= len; i += 4) {
      h = h * m4 + (data[i] + 1u) * m3 + (data[i + 1] + 1u) * m2 + (data[i + 2] + 1u) * kMultiplier +
          (data[i + 3] + 1u);
    }
    for (; i < len; ++i) h = h * kMultiplier + (data[i] + 1u);
    return h;
  }

  // Slides the window one byte: `out` leaves at the front, `in` joins at the back.
  std::uint64_t roll(std::uint64_t h, std::uint8_t out, std::uint8_t in) const {
    return (h - (out + 1u) * top_power_) * kMultiplier + (in + 1u);
  }

  static std::uint32_t fold(std::uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return static_cast<std::uint32_t>(h);
  }

 private:
  std::uint64_t top_power_ = 1;
};

}  // namespace ferry::delta

// RollingHash::compute, the from-scratch weak hash of a block: every signed block and every
// block the matcher looks at afresh pays it, a byte at a time in the scalar definition (one
// multiply per byte: ~0.35 s per GiB). With AVX2 it runs as a dot product of the bytes with a
// table of powers of M, split into signed 16-bit limbs so vpmaddwd does the multiplies: the
// same value mod 2^64, ~3x the speed here (323 -> ~110 ms per GiB).
#include "protocol/delta/rolling_hash.hpp"

#include <array>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FERRY_ROLLING_AVX2 1
#endif

namespace ferry::delta {
namespace {

#ifdef FERRY_ROLLING_AVX2

// Bytes per table pass. Each 32-bit lane takes L/16 pair sums of at most 2 * 128 * 2^15 = 2^23,
// so L = 2048 keeps a lane under 2^30; the table is 4 limbs x L x 2 bytes = 16 KiB (fits L1).
constexpr std::size_t kSpan = 2048;
constexpr int kLimbs = 4;

// M^(kSpan-1-i) for i in [0, kSpan), as balanced limbs: P = sum_k limb[k][i] * 2^(16k) mod 2^64
// with every limb in [-2^15, 2^15). Bytes enter as b - 128 (signed), so the "+1" of the
// definition and the shift by 128 come back as 129 * sum_i P_i.
struct PowerTable {
  alignas(32) std::array<std::array<std::int16_t, kSpan>, kLimbs> limb{};
  std::uint64_t power_sum = 0;   // sum_i M^(kSpan-1-i)
  std::uint64_t span_power = 1;  // M^kSpan

  PowerTable() {
    std::uint64_t p = 1;
    for (std::size_t i = kSpan; i-- > 0;) {
      power_sum += p;
      std::uint64_t rest = p;
      for (int k = 0; k < kLimbs; ++k) {
        auto chunk = static_cast<std::int32_t>(rest & 0xffff);
        rest >>= 16;
        if (chunk >= 0x8000) {  // borrow from the next limb (carries past 2^64 vanish mod 2^64)
          chunk -= 0x10000;
          ++rest;
        }
        limb[k][i] = static_cast<std::int16_t>(chunk);
      }
      p *= RollingHash::kMultiplier;
    }
    span_power = p;
  }
};

const PowerTable& power_table() {
  static const PowerTable table;
  return table;
}

__attribute__((target("avx2"))) std::int64_t sum_lanes(__m256i v) {
  // Eight signed 32-bit lanes summed as 64-bit integers (their sum can pass 2^31).
  const __m256i wide = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(v)),
                                        _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1)));
  const __m128i two = _mm_add_epi64(_mm256_castsi256_si128(wide), _mm256_extracti128_si256(wide, 1));
  return _mm_cvtsi128_si64(two) + _mm_extract_epi64(two, 1);
}

// sum_i (data[i] + 1) * M^(kSpan-1-i) mod 2^64 for one span of kSpan bytes.
__attribute__((target("avx2"))) std::uint64_t span_value(const std::uint8_t* data, const PowerTable& t) {
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (std::size_t i = 0; i < kSpan; i += 16) {
    const __m128i x = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i)), flip);
    const __m256i w = _mm256_cvtepi8_epi16(x);
    a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(w, _mm256_load_si256(reinterpret_cast<const __m256i*>(t.limb[0].data() + i))));
    a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(w, _mm256_load_si256(reinterpret_cast<const __m256i*>(t.limb[1].data() + i))));
    a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(w, _mm256_load_si256(reinterpret_cast<const __m256i*>(t.limb[2].data() + i))));
    a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(w, _mm256_load_si256(reinterpret_cast<const __m256i*>(t.limb[3].data() + i))));
  }
  const __m256i acc[kLimbs] = {a0, a1, a2, a3};
  std::uint64_t v = 129u * t.power_sum;
  for (int k = 0; k < kLimbs; ++k) v += static_cast<std::uint64_t>(sum_lanes(acc[k])) << (16 * k);
  return v;
}

__attribute__((target("avx2"))) std::uint64_t compute_avx2(const std::uint8_t* data, std::size_t len) {
  const PowerTable& t = power_table();
  std::uint64_t h = 0;
  std::size_t i = 0;
  for (; i + kSpan <= len; i += kSpan) h = h * t.span_power + span_value(data + i, t);
  return RollingHash::compute_scalar(data + i, len - i, h);
}

bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}

#endif

}  // namespace

std::uint64_t RollingHash::compute(const std::uint8_t* data, std::size_t len) {
#ifdef FERRY_ROLLING_AVX2
  if (len >= kSpan && has_avx2()) return compute_avx2(data, len);
#endif
  return compute_scalar(data, len);
}

}  // namespace ferry::delta

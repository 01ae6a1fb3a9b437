// Deterministic pseudo-random bytes for tests (incompressible data that rsync-style matching and
// zstd cannot shortcut), as a byte vector or a string. Header-only.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace ferry::test {

// `n` bytes drawn from `rng`, eight per draw; callers that make several buffers from one
// generator pass the same `rng`.
template <class Out = std::vector<std::uint8_t>>
Out random_bytes(std::mt19937_64& rng, std::size_t n) {
  Out out(n, typename Out::value_type{});
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(out.data() + i, &v, n - i < 8 ? n - i : 8);
  }
  return out;
}

// `n` bytes from a generator seeded with `seed`: the same seed gives the same bytes.
template <class Out = std::vector<std::uint8_t>>
Out random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return random_bytes<Out>(rng, n);
}

}  // namespace ferry::test

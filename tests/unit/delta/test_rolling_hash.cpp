// The weak hash: the vectorized compute gives the definition's value (compute_scalar) at every
// length and alignment, and rolling a window gives what computing it afresh gives.
#define BOOST_TEST_MODULE rolling_hash
#include <boost/test/unit_test.hpp>

#include <random>
#include <vector>

#include "protocol/delta/rolling_hash.hpp"
#include "tests/support/random_bytes.hpp"

using ferry::delta::RollingHash;

BOOST_AUTO_TEST_CASE(compute_equals_the_definition_at_every_length_and_alignment) {
  const auto data = ferry::test::random_bytes((1u << 20) + 64, 7);
  // Around the vector path's span (2048 bytes) and its multiples, then random ones.
  std::vector<std::size_t> lengths = {0, 1, 3, 4, 5, 31, 32, 2047, 2048, 2049, 4095, 4096, 4097, 6144 + 17, 65536, 1u << 20};
  std::mt19937_64 rng(11);
  for (int i = 0; i < 400; ++i) lengths.push_back(rng() % 40000);
  for (std::size_t len : lengths)
    for (std::size_t misalign : {0u, 1u, 7u, 33u}) {
      const std::uint8_t* p = data.data() + misalign;
      BOOST_TEST_INFO("length " << len << " at +" << misalign);
      BOOST_TEST(RollingHash::compute(p, len) == RollingHash::compute_scalar(p, len));
    }
}

BOOST_AUTO_TEST_CASE(extreme_bytes_do_not_overflow_the_vector_sums) {
  // All 0xff (the largest product per lane) and all 0x00 (the most negative after the shift).
  for (std::uint8_t fill : {std::uint8_t{0xff}, std::uint8_t{0x00}, std::uint8_t{0x80}, std::uint8_t{0x7f}}) {
    const std::vector<std::uint8_t> data(3u << 20, fill);
    BOOST_TEST_INFO("fill " << int(fill));
    BOOST_TEST(RollingHash::compute(data.data(), data.size()) == RollingHash::compute_scalar(data.data(), data.size()));
  }
}

BOOST_AUTO_TEST_CASE(rolling_a_window_equals_computing_it_afresh) {
  const auto data = ferry::test::random_bytes(1u << 16, 3);
  for (std::size_t window : {1u, 16u, 2048u, 5000u}) {
    const RollingHash roller(window);
    std::uint64_t h = RollingHash::compute(data.data(), window);
    for (std::size_t p = 0; p + window < 12000; ++p) h = roller.roll(h, data[p], data[p + window]);
    const std::size_t at = 12000 - window;
    BOOST_TEST_INFO("window " << window);
    BOOST_TEST(h == RollingHash::compute(data.data() + at, window));
  }
}

// SHA-256: FIPS 180-4's examples, and OpenSSL's digest of the same bytes for every length across
// the block and padding edges, fed whole and in uneven pieces.
#define BOOST_TEST_MODULE sha256
#include <boost/test/unit_test.hpp>

#include <openssl/evp.h>

#include <random>
#include <string>

#include "common/sha256.hpp"

namespace {

std::string openssl_hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
  std::string hex;
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

std::string hex_of(const ferry::Sha256::Digest& d) {
  std::string hex;
  static constexpr char kHex[] = "0123456789abcdef";
  for (auto b : d) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return hex;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_standard_examples) {
  BOOST_TEST(ferry::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  BOOST_TEST(ferry::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(ferry::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  BOOST_TEST(ferry::sha256_hex(std::string(1000000, 'a')) ==
             "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

BOOST_AUTO_TEST_CASE(every_length_to_three_blocks_matches_openssl_whole_and_in_pieces) {
  std::mt19937 rng(7);
  for (std::size_t n = 0; n <= 200; ++n) {
    std::string bytes(n, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    const std::string expected = openssl_hex(bytes);
    BOOST_TEST(ferry::sha256_hex(bytes) == expected, "length " << n);
    ferry::Sha256 pieces;
    for (std::size_t at = 0; at < n;) {
      const std::size_t take = std::min<std::size_t>(n - at, 1 + rng() % 70);
      pieces.update(std::string_view(bytes).substr(at, take));
      at += take;
    }
    BOOST_TEST(hex_of(pieces.finish()) == expected, "length " << n << " in pieces");
  }
}

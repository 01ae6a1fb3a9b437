// The keystream-buffering AES-CTR provider against OpenSSL's own AES-CTR: NIST SP 800-38A's
// vectors through the legacy EVP_aes_128_ctr() path libssh2 uses, 16-byte calls as libssh2 makes
// them, random chunkings across keystream refills for all three key sizes, counter carry, copies
// of a context mid-stream and a re-keyed IV.
#define BOOST_TEST_MODULE aes_ctr_provider
#include <boost/test/unit_test.hpp>

#include <openssl/evp.h>
#include <openssl/provider.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "helper/ssh/aes_ctr_provider.hpp"
#include "tests/support/random_bytes.hpp"

using namespace ferry::ssh;
using Bytes = std::vector<unsigned char>;

namespace {

struct CtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using Ctx = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;

Bytes from_hex(std::string_view hex) {
  Bytes out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<unsigned char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

const EVP_CIPHER* legacy_ctr(std::size_t key_len) {
  return key_len == 16 ? EVP_aes_128_ctr() : key_len == 24 ? EVP_aes_192_ctr() : EVP_aes_256_ctr();
}

// What libssh2 1.10 does: a legacy cipher, EVP_CipherInit, then EVP_Cipher per block.
Ctx libssh2_style(std::size_t key_len, const Bytes& key, const Bytes& iv, int enc) {
  Ctx c(EVP_CIPHER_CTX_new());
  BOOST_REQUIRE(EVP_CipherInit(c.get(), legacy_ctr(key_len), key.data(), iv.data(), enc) == 1);
  return c;
}

std::string provider_of(EVP_CIPHER_CTX* c) {
  return OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(EVP_CIPHER_CTX_get0_cipher(c)));
}

Bytes apply(EVP_CIPHER_CTX* c, const Bytes& in, const std::vector<std::size_t>& chunks) {
  Bytes out(in.size());
  std::size_t at = 0;
  for (std::size_t i = 0; at < in.size(); ++i) {
    auto n = std::min(chunks[i % chunks.size()], in.size() - at);
    BOOST_REQUIRE(EVP_Cipher(c, out.data() + at, in.data() + at, static_cast<unsigned>(n)) != -1);
    at += n;
  }
  return out;
}

// OpenSSL's default provider, whole buffer at once.
Bytes reference(std::size_t key_len, const Bytes& key, const Bytes& iv, const Bytes& in) {
  const char* name = key_len == 16 ? "AES-128-CTR" : key_len == 24 ? "AES-192-CTR" : "AES-256-CTR";
  EVP_CIPHER* cipher = EVP_CIPHER_fetch(nullptr, name, "provider=default");
  BOOST_REQUIRE(cipher != nullptr);
  Ctx c(EVP_CIPHER_CTX_new());
  BOOST_REQUIRE(EVP_EncryptInit_ex2(c.get(), cipher, key.data(), iv.data(), nullptr) == 1);
  BOOST_TEST(provider_of(c.get()) == "default");
  Bytes out(in.size());
  int outl = 0;
  BOOST_REQUIRE(EVP_EncryptUpdate(c.get(), out.data(), &outl, in.data(), static_cast<int>(in.size())) == 1);
  BOOST_REQUIRE(static_cast<std::size_t>(outl) == in.size());
  EVP_CIPHER_free(cipher);
  return out;
}

using ferry::test::random_bytes;

struct Installed {
  Installed() {
    std::string why;
    BOOST_REQUIRE_MESSAGE(install_aes_ctr_provider(&why), why);
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(provider_installed, Installed)

BOOST_AUTO_TEST_CASE(nist_sp800_38a_vectors_through_the_legacy_path) {
  // F.5.1 CTR-AES128.Encrypt and F.5.5 CTR-AES256.Encrypt.
  auto iv = from_hex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
  auto plain = from_hex(
      "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411e5fbc1191a0a52ef"
      "f69f2445df4f9b17ad2b417be66c3710");
  struct Case {
    std::string key, cipher;
  } cases[] = {
      {"2b7e151628aed2a6abf7158809cf4f3c",
       "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff5ae4df3edbd5d35e5b4f09020db03eab"
       "1e031dda2fbe03d1792170a0f3009cee"},
      {"603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
       "601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c52b0930daa23de94ce87017ba2d84988d"
       "dfc9c58db67aada613c2dd08457941a6"},
  };
  for (const auto& c : cases) {
    auto key = from_hex(c.key);
    auto before = aes_ctr_provider_stats();
    auto enc = libssh2_style(key.size(), key, iv, 1);
    BOOST_TEST(provider_of(enc.get()) == "ferry-aes-ctr");
    BOOST_TEST((apply(enc.get(), plain, {16}) == from_hex(c.cipher)));
    auto dec = libssh2_style(key.size(), key, iv, 0);
    BOOST_TEST((apply(dec.get(), from_hex(c.cipher), {16}) == plain));
    auto after = aes_ctr_provider_stats();
    BOOST_TEST(after.contexts >= before.contexts + 2);
    BOOST_TEST(after.keystream_bytes >= before.keystream_bytes + 2 * plain.size());
  }
}

BOOST_AUTO_TEST_CASE(random_chunkings_across_refills_match_openssl) {
  std::mt19937_64 rng(20261130);
  for (std::size_t key_len : {16u, 24u, 32u}) {
    for (int round = 0; round < 6; ++round) {
      auto key = random_bytes(rng, key_len);
      auto iv = random_bytes(rng, 16);
      if (round == 1) std::fill(iv.begin(), iv.end(), 0xff);  // the counter wraps to zero
      if (round == 2) std::fill(iv.begin() + 8, iv.end(), 0xff);  // carry past the low 32 and 64 bits
      auto data = random_bytes(rng, 100'000 + rng() % 70'000);  // several 16 KiB keystream refills
      std::vector<std::size_t> chunks;
      if (round == 0)
        chunks = {16};
      else
        for (int i = 0; i < 50; ++i) chunks.push_back(1 + rng() % 5000);
      auto ctx = libssh2_style(key_len, key, iv, 1);
      BOOST_TEST((apply(ctx.get(), data, chunks) == reference(key_len, key, iv, data)),
                 "key " << key_len << " round " << round);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_copied_context_continues_the_same_stream) {
  std::mt19937_64 rng(7);
  auto key = random_bytes(rng, 16), iv = random_bytes(rng, 16);
  auto data = random_bytes(rng, 60'000);
  auto want = reference(16, key, iv, data);
  auto a = libssh2_style(16, key, iv, 1);
  Bytes head(data.begin(), data.begin() + 20'000), tail(data.begin() + 20'000, data.end());
  auto got_head = apply(a.get(), head, {16, 32, 1000});
  Ctx b(EVP_CIPHER_CTX_new());
  BOOST_REQUIRE(EVP_CIPHER_CTX_copy(b.get(), a.get()) == 1);
  auto tail_a = apply(a.get(), tail, {16});
  auto tail_b = apply(b.get(), tail, {4096});
  BOOST_TEST((Bytes(want.begin(), want.begin() + 20'000) == got_head));
  BOOST_TEST((Bytes(want.begin() + 20'000, want.end()) == tail_a));
  BOOST_TEST((tail_a == tail_b));
}

BOOST_AUTO_TEST_CASE(a_new_iv_restarts_the_keystream) {
  std::mt19937_64 rng(8);
  auto key = random_bytes(rng, 32), iv1 = random_bytes(rng, 16), iv2 = random_bytes(rng, 16);
  auto data = random_bytes(rng, 5'000);
  auto c = libssh2_style(32, key, iv1, 1);
  apply(c.get(), data, {16});
  BOOST_REQUIRE(EVP_CipherInit_ex(c.get(), nullptr, nullptr, nullptr, iv2.data(), 1) == 1);
  BOOST_TEST((apply(c.get(), data, {16}) == reference(32, key, iv2, data)));
}

BOOST_AUTO_TEST_CASE(other_algorithms_still_come_from_the_default_provider) {
  Ctx c(EVP_CIPHER_CTX_new());
  Bytes key(16, 1), iv(16, 2);
  BOOST_REQUIRE(EVP_CipherInit(c.get(), EVP_aes_128_cbc(), key.data(), iv.data(), 1) == 1);
  BOOST_TEST(provider_of(c.get()) == "default");
}

BOOST_AUTO_TEST_SUITE_END()

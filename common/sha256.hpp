// SHA-256 (FIPS 180-4) in plain C++: the CLI hashes the trust record's fields and paths on every
// command, and OpenSSL's first digest (config file, provider and name tables, then their cleanup at
// exit) cost more than the rest of a riding command's own work. No dependencies.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ferry {

class Sha256 {
 public:
  using Digest = std::array<std::uint8_t, 32>;

  Sha256();
  void update(std::string_view bytes);
  void update(const void* data, std::size_t size);
  // The digest of everything updated; the object is spent after it.
  Digest finish();

 private:
  void compress(const std::uint8_t* block);

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> block_{};
  std::size_t used_ = 0;
  std::uint64_t total_ = 0;
};

Sha256::Digest sha256(std::string_view bytes);
// Lower-case hex of the digest, 64 characters.
std::string sha256_hex(std::string_view bytes);

}  // namespace ferry

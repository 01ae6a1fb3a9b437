// Base64 (RFC 4648, standard alphabet): bytes that are not UTF-8 on the IDE wire (run/output,
// run/input) and the key blobs of known_hosts and OpenSSH key files.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::protocol {

// `pad` false drops the trailing '=' (OpenSSH's SHA256 fingerprints are written that way).
std::string base64_encode(const std::vector<std::uint8_t>& bytes, bool pad = true);

// Strict: the length is a multiple of 4, only the alphabet, and '=' only as the last one or two.
std::expected<std::vector<std::uint8_t>, std::string> base64_decode(std::string_view text);

}  // namespace ferry::protocol

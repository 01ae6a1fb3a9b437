// Base64 encode/decode (see base64.hpp), table-driven, no library.
#include "protocol/base64.hpp"

#include <array>

namespace ferry::protocol {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// 0..63 for the alphabet, -1 for anything else.
constexpr std::array<int, 256> decode_table() {
  std::array<int, 256> t{};
  t.fill(-1);
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(kAlphabet[i])] = i;
  return t;
}
constexpr auto kDecode = decode_table();

}  // namespace

std::string base64_encode(const std::vector<std::uint8_t>& bytes, bool pad) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = (std::uint32_t{bytes[i]} << 16) | (std::uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
    for (int shift : {18, 12, 6, 0}) out.push_back(kAlphabet[(v >> shift) & 63]);
  }
  if (const std::size_t left = bytes.size() - i; left > 0) {
    std::uint32_t v = std::uint32_t{bytes[i]} << 16;
    if (left == 2) v |= std::uint32_t{bytes[i + 1]} << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    if (left == 2) out.push_back(kAlphabet[(v >> 6) & 63]);
    if (pad) out.append(left == 2 ? "=" : "==");
  }
  return out;
}

std::expected<std::vector<std::uint8_t>, std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::unexpected("base64 length is not a multiple of 4");
  std::size_t padding = 0;
  if (text.ends_with("==")) padding = 2;
  else if (text.ends_with("=")) padding = 1;
  std::vector<std::uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const bool pad_char = i + k >= text.size() - padding;
      const int d = pad_char ? (text[i + k] == '=' ? 0 : -1) : kDecode[static_cast<unsigned char>(text[i + k])];
      if (d < 0) return std::unexpected("not base64");
      v = (v << 6) | static_cast<std::uint32_t>(d);
    }
    out.push_back(static_cast<std::uint8_t>(v >> 16));
    out.push_back(static_cast<std::uint8_t>(v >> 8));
    out.push_back(static_cast<std::uint8_t>(v));
  }
  out.resize(out.size() - padding);
  return out;
}

}  // namespace ferry::protocol

// Private key file inspection (see private_key_file.hpp).
#include "helper/ssh/private_key_file.hpp"

#include <fstream>
#include <sstream>

#include "helper/ssh/known_hosts.hpp"

namespace ferry::ssh {

std::expected<PrivateKeyInfo, std::string> inspect_private_key(std::string_view text) {
  constexpr std::string_view kOpensshBegin = "-----BEGIN OPENSSH PRIVATE KEY-----";
  constexpr std::string_view kOpensshEnd = "-----END OPENSSH PRIVATE KEY-----";
  PrivateKeyInfo info;
  if (auto b = text.find(kOpensshBegin); b != std::string_view::npos) {
    info.format = "openssh";
    auto start = b + kOpensshBegin.size();
    auto e = text.find(kOpensshEnd, start);
    if (e == std::string_view::npos) return std::unexpected("unterminated OPENSSH PRIVATE KEY block");
    std::string b64;
    for (char c : text.substr(start, e - start))
      if (c != '\n' && c != '\r' && c != ' ' && c != '\t') b64 += c;
    // Only the header matters: decode the first few blocks.
    std::string head = b64.substr(0, std::min<std::size_t>(b64.size(), 128) / 4 * 4);
    auto bytes = base64_decode(head);
    if (!bytes) return std::unexpected("OPENSSH PRIVATE KEY block is not base64");
    constexpr std::string_view kMagic{"openssh-key-v1\0", 15};
    if (bytes->size() < kMagic.size() + 4 ||
        std::string_view(reinterpret_cast<const char*>(bytes->data()), kMagic.size()) != kMagic)
      return std::unexpected("not an openssh-key-v1 key");
    const auto* p = bytes->data() + kMagic.size();
    std::uint32_t len = (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
    if (len > bytes->size() - kMagic.size() - 4) return std::unexpected("truncated openssh key header");
    info.cipher.assign(reinterpret_cast<const char*>(p + 4), len);
    info.encrypted = info.cipher != "none";
    return info;
  }
  if (text.find("-----BEGIN ENCRYPTED PRIVATE KEY-----") != std::string_view::npos) {
    info.format = "pkcs8";
    info.encrypted = true;
    return info;
  }
  if (text.find("PRIVATE KEY-----") != std::string_view::npos) {
    info.format = "pem";
    info.encrypted = text.find("Proc-Type: 4,ENCRYPTED") != std::string_view::npos;
    return info;
  }
  return std::unexpected("not a private key file");
}

std::expected<PrivateKeyInfo, std::string> inspect_private_key_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::unexpected("cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return inspect_private_key(ss.str());
}

}  // namespace ferry::ssh

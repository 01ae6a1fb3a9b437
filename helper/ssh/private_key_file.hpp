// What ferry needs to know about a private key file before handing it to libssh2: whether it is
// encrypted (so a passphrase must be asked for) and what kind it is, for messages.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <string_view>

namespace ferry::ssh {

struct PrivateKeyInfo {
  std::string format;  // "openssh", "pem", "pkcs8"
  bool encrypted = false;
  std::string cipher;  // for openssh keys: "none", "aes256-ctr", ...
};

// Parses the text of a key file (no key material is decoded beyond the header).
std::expected<PrivateKeyInfo, std::string> inspect_private_key(std::string_view text);
std::expected<PrivateKeyInfo, std::string> inspect_private_key_file(const std::filesystem::path& path);

}  // namespace ferry::ssh

// known_hosts matching and fingerprints (see known_hosts.hpp). Hashes come from OpenSSL's libcrypto,
// which libssh2 links anyway.
#include "helper/ssh/known_hosts.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "common/full_io.hpp"
#include "common/open_file.hpp"
#include "common/unique_fd.hpp"
#include "helper/ssh/ssh_config.hpp"

namespace ferry::ssh {
namespace {

std::vector<std::string> split_ws(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    std::size_t s = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > s) out.emplace_back(line.substr(s, i - s));
  }
  return out;
}

bool hashed_matches(std::string_view entry, std::string_view name) {
  // |1|base64(salt)|base64(HMAC-SHA1(salt, name))
  auto rest = entry.substr(3);
  auto bar = rest.find('|');
  if (bar == std::string_view::npos) return false;
  auto salt = base64_decode(rest.substr(0, bar));
  auto hash = base64_decode(rest.substr(bar + 1));
  if (!salt || !hash || salt->size() != 20 || hash->size() != 20) return false;
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha1(), salt->data(), static_cast<int>(salt->size()),
            reinterpret_cast<const unsigned char*>(name.data()), name.size(), out, &len))
    return false;
  return len == hash->size() && std::memcmp(out, hash->data(), len) == 0;
}

std::vector<KnownHostEntry> entries_for(const std::vector<std::filesystem::path>& files, std::string_view host,
                                        int port) {
  std::string name = known_hosts_name(host, port);
  std::vector<KnownHostEntry> out;
  for (const auto& f : files)
    for (auto& e : read_known_hosts(f))
      if (e.marker != "@cert-authority" && host_field_matches(e.hosts, name)) out.push_back(std::move(e));
  return out;
}

}  // namespace

std::string sha256_fingerprint(const std::vector<std::uint8_t>& blob) {
  std::vector<std::uint8_t> digest(SHA256_DIGEST_LENGTH);
  SHA256(blob.data(), blob.size(), digest.data());
  return "SHA256:" + base64_encode(digest, false);
}

std::string key_type_of_blob(const std::vector<std::uint8_t>& blob) {
  if (blob.size() < 4) return "";
  std::uint32_t len = (std::uint32_t{blob[0]} << 24) | (std::uint32_t{blob[1]} << 16) | (std::uint32_t{blob[2]} << 8) | blob[3];
  if (len > blob.size() - 4 || len > 64) return "";
  return std::string(blob.begin() + 4, blob.begin() + 4 + len);
}

std::string known_hosts_name(std::string_view host, int port) {
  if (port == 22) return std::string(host);
  // Appending (not operator+ on temporaries) sidesteps GCC 12's -Wrestrict false positive.
  std::string name;
  name.reserve(host.size() + 8);
  name.append("[").append(host).append("]:").append(std::to_string(port));
  return name;
}

bool host_field_matches(std::string_view field, std::string_view name) {
  if (field.starts_with("|1|")) return hashed_matches(field, name);
  std::vector<std::string> list{std::string(field)};
  return match_pattern_list(list, name);
}

std::vector<KnownHostEntry> read_known_hosts(const std::filesystem::path& file) {
  std::vector<KnownHostEntry> out;
  std::ifstream in(file);
  if (!in) return out;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    auto fields = split_ws(line);
    if (fields.empty() || fields[0].starts_with("#")) continue;
    KnownHostEntry e;
    e.file = file.string();
    e.line = number;
    std::size_t i = 0;
    if (fields[0].starts_with("@")) {
      e.marker = fields[0];
      i = 1;
    }
    if (fields.size() < i + 3) continue;
    e.hosts = fields[i];
    e.key.type = fields[i + 1];
    auto blob = base64_decode(fields[i + 2]);
    if (!blob) continue;
    e.key.blob = std::move(*blob);
    // A line whose stated type disagrees with its blob is corrupt; OpenSSH ignores it too.
    if (key_type_of_blob(e.key.blob) != e.key.type) continue;
    out.push_back(std::move(e));
  }
  return out;
}

HostKeyCheck check_host_key(const std::vector<std::filesystem::path>& files, std::string_view host, int port,
                            const PublicKey& offered) {
  HostKeyCheck result;
  auto entries = entries_for(files, host, port);
  for (const auto& e : entries)
    if (e.marker == "@revoked" && e.key.blob == offered.blob) {
      result.status = HostKeyStatus::kRevoked;
      result.known = {e};
      return result;
    }
  // Revocations can match any host (OpenSSH checks @revoked keys regardless of the host field).
  for (const auto& f : files)
    for (auto& e : read_known_hosts(f))
      if (e.marker == "@revoked" && e.key.blob == offered.blob) {
        result.status = HostKeyStatus::kRevoked;
        result.known = {e};
        return result;
      }
  for (auto& e : entries) {
    if (e.marker.empty()) result.known.push_back(e);
  }
  if (result.known.empty()) return result;
  for (const auto& e : result.known)
    if (e.key.blob == offered.blob) {
      result.status = HostKeyStatus::kMatch;
      return result;
    }
  result.status = HostKeyStatus::kChanged;
  return result;
}

std::vector<std::string> known_key_types(const std::vector<std::filesystem::path>& files, std::string_view host,
                                         int port) {
  std::vector<std::string> types;
  for (const auto& e : entries_for(files, host, port))
    if (e.marker.empty() && std::find(types.begin(), types.end(), e.key.type) == types.end()) types.push_back(e.key.type);
  return types;
}

std::expected<void, std::string> append_known_host(const std::filesystem::path& file, std::string_view host, int port,
                                                   const PublicKey& key) {
  std::error_code ec;
  if (file.has_parent_path()) {
    std::filesystem::create_directories(file.parent_path(), ec);
    if (ec) return std::unexpected("cannot create " + file.parent_path().string() + ": " + ec.message());
  }
  ferry::posix::UniqueFd fd(ferry::posix::open_file(file, O_WRONLY | O_APPEND | O_CREAT, 0600));
  if (!fd) return std::unexpected("cannot open " + file.string() + ": " + std::strerror(errno));
  // Make sure the new entry starts on its own line even if the file lacks a final newline.
  std::string prefix;
  const std::uintmax_t size = std::filesystem::file_size(file, ec);
  if (!ec && size > 0) {
    const ferry::posix::UniqueFd rfd(ferry::posix::open_file(file, O_RDONLY));
    char last = '\n';
    if (rfd && ferry::posix::pread_full(rfd.get(), &last, 1, size - 1) != 1) last = '\n';
    if (last != '\n') prefix = "\n";
  }
  std::string line = prefix + known_hosts_name(host, port) + " " + key.type + " " + base64_encode(key.blob) + "\n";
  // One write(2) keeps the entry whole against another ssh appending at the same time (O_APPEND);
  // write_full only goes on if the kernel cut it short.
  if (ferry::posix::write_full(fd.get(), line.data(), line.size()) < 0 || fd.close() != 0)
    return std::unexpected("cannot write " + file.string() + ": " + std::strerror(errno));
  return {};
}

}  // namespace ferry::ssh

// known_hosts(5) files: parsing, matching a host (plain, wildcard, negated, hashed |1|salt|hash and
// [host]:port entries), fingerprints as OpenSSH prints them, and appending a new entry.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base64.hpp"

namespace ferry::ssh {

// A public key as it travels in SSH: its algorithm name and wire blob.
struct PublicKey {
  std::string type;               // "ssh-ed25519", "ecdsa-sha2-nistp256", ...
  std::vector<std::uint8_t> blob;  // the SSH wire encoding (what base64 in known_hosts decodes to)
  bool operator==(const PublicKey&) const = default;
};

// "SHA256:..." (unpadded base64 of the blob's SHA-256), as `ssh-keygen -lf` prints it.
std::string sha256_fingerprint(const std::vector<std::uint8_t>& blob);

// The key type written inside the blob (its first SSH string), or "" if the blob is malformed.
std::string key_type_of_blob(const std::vector<std::uint8_t>& blob);

struct KnownHostEntry {
  std::string file;
  int line = 0;
  std::string marker;  // "", "@revoked" or "@cert-authority"
  std::string hosts;   // the host field as written
  PublicKey key;
};

// The name known_hosts stores for a host: "host" on port 22, else "[host]:port".
std::string known_hosts_name(std::string_view host, int port);

// Does the host field (comma list, wildcards, negation, or one hashed |1|salt|hash) match `name`?
bool host_field_matches(std::string_view field, std::string_view name);

// Parses one file. Unparseable lines are skipped (as OpenSSH does); a missing file yields nothing.
std::vector<KnownHostEntry> read_known_hosts(const std::filesystem::path& file);

enum class HostKeyStatus {
  kMatch,     // a listed key equals the offered one
  kUnknown,   // no entry for this host
  kChanged,   // the host is listed with other key(s) only: possible man-in-the-middle
  kRevoked,   // the offered key is marked @revoked
};

struct HostKeyCheck {
  HostKeyStatus status = HostKeyStatus::kUnknown;
  std::vector<KnownHostEntry> known;  // the entries for this host (for the changed-key message)
};

// Checks `offered` for host:port against the entries of every file in `files`.
HostKeyCheck check_host_key(const std::vector<std::filesystem::path>& files, std::string_view host, int port,
                            const PublicKey& offered);

// Key types listed for this host, most useful first, to steer host key negotiation.
std::vector<std::string> known_key_types(const std::vector<std::filesystem::path>& files, std::string_view host,
                                         int port);

// Appends "name type base64" to `file` (creating it and its directory, mode 0600), in one write.
std::expected<void, std::string> append_known_host(const std::filesystem::path& file, std::string_view host, int port,
                                                   const PublicKey& key);

// known_hosts lines and key files carry their blobs in base64 (protocol/base64.hpp).
using protocol::base64_decode;
using protocol::base64_encode;

}  // namespace ferry::ssh

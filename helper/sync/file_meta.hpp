// What sync knows about one path, on either side: kind, permission bits, size, mtime (ns),
// content hash (xxh3-128) and, for symlinks, the target. Shared by scanner, index, manifest,
// the remote state summary and the planner.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/delta/delta_types.hpp"

namespace ferry::sync {

using Hash128 = ferry::delta::Hash128;

enum class EntryKind : std::uint8_t { file = 0, dir = 1, symlink = 2 };

struct FileMeta {
  EntryKind kind = EntryKind::file;
  std::uint32_t mode = 0;   // permission bits only (07777)
  std::uint64_t size = 0;   // files; 0 for dirs; target length for symlinks
  std::int64_t mtime_ns = 0;
  std::optional<Hash128> hash;  // files, when known
  std::string link_target;      // symlinks
  bool operator==(const FileMeta&) const = default;
};

// Relative '/'-separated path -> metadata, sorted so parents precede children.
using TreeState = std::map<std::string, FileMeta>;

// Lowercase hex, and back (nullopt for an odd length or anything but 0-9a-f).
std::string bytes_to_hex(std::string_view bytes);
std::optional<std::string> bytes_from_hex(std::string_view hex);
std::string to_hex(const Hash128& h);
std::optional<Hash128> hash_from_hex(std::string_view hex);

}  // namespace ferry::sync

// The local hash cache: xxh3-128 per file keyed by (size, mtime_ns, mode, inode), persisted
// between runs as a small versioned binary file written atomically, so an unchanged file is
// never re-hashed. A hash taken within kRacyWindowNs of the file's mtime is not trusted later:
// a second write in the same timestamp tick would otherwise go unnoticed (git's "racy clean").
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/file_times.hpp"
#include "helper/sync/file_meta.hpp"

namespace ferry::sync {

inline constexpr std::int64_t kRacyWindowNs = 2'000'000'000;
inline constexpr std::uint32_t kIndexVersion = 1;

struct IndexKey {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint32_t mode = 0;
  std::uint64_t inode = 0;
  bool operator==(const IndexKey&) const = default;
};

// The key of the file `st` describes.
IndexKey index_key_of(const ferry::posix::FileStat& st);

class FileIndex {
 public:
  // A missing file gives an empty index; a corrupt or other-version one is an error (callers
  // usually log it and start empty: the index is only a cache).
  static std::expected<FileIndex, std::string> load(const std::filesystem::path& file);
  // Temp file in the same directory, fsync, rename, fsync the directory.
  std::expected<void, std::string> save(const std::filesystem::path& file) const;

  // Thread safe.
  std::optional<Hash128> lookup(const std::string& path, const IndexKey& key) const;
  void store(const std::string& path, const IndexKey& key, const Hash128& hash, std::int64_t hashed_at_ns);
  // Drops entries for paths not in `live` (deleted or now ignored files).
  void retain(const TreeState& live);
  std::size_t size() const;

  FileIndex() = default;
  FileIndex(FileIndex&& o) noexcept : entries_(std::move(o.entries_)) {}
  FileIndex& operator=(FileIndex&& o) noexcept {
    entries_ = std::move(o.entries_);
    return *this;
  }

 private:
  struct Entry {
    IndexKey key;
    Hash128 hash;
    std::int64_t hashed_at_ns = 0;
  };
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
};

std::int64_t now_ns();

// <project>/.ferry/index.bin (the .ferry/ directory is never synced).
inline std::filesystem::path default_index_path(const std::filesystem::path& project_root) {
  return project_root / ".ferry" / "index.bin";
}

}  // namespace ferry::sync

// The local tree walk: both cores list directories and hash files in parallel, never following
// symlinks (they are recorded with their targets), pruning ignored directories, reusing cached
// hashes from the index, and reporting files that changed while being hashed as unstable.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "helper/sync/file_meta.hpp"
#include "helper/sync/ignore_rules.hpp"

namespace ferry::sync {

class FileIndex;

struct ScanOptions {
  unsigned threads = 0;  // 0: one per core (at most 8: the walk is I/O-bound beyond that)
  bool hash_files = true;
  // When set, a file with no cached hash is hashed only if this says so (path, size); the
  // others are recorded without one: the sender hashes them as it reads them (one read, not two).
  std::function<bool(const std::string&, std::uint64_t)> hash_if;
  // Called with a file's path after its bytes were read and before the closing stat: lets a
  // test change the file at exactly the moment a real editor might.
  std::function<void(const std::string&)> after_read_hook;
};

struct ScanIssue {
  std::string path;
  std::string message;  // e.g. "permission denied", "special file skipped"
};

struct ScanStats {
  std::uint64_t files = 0, dirs = 0, symlinks = 0;
  std::uint64_t hashed = 0, hash_cache_hits = 0, bytes_hashed = 0;
};

struct ScanResult {
  TreeState entries;                 // everything not ignored (unstable files excluded)
  std::vector<std::string> unstable;  // files that changed while being read: retry later
  std::vector<ScanIssue> issues;      // unreadable or special entries, skipped
  ScanStats stats;
};

// Scans `root`. `index` (optional) supplies cached hashes and receives the new ones.
std::expected<ScanResult, std::string> scan_tree(const std::filesystem::path& root, const IgnoreMatcher& ignore,
                                                 FileIndex* index, const ScanOptions& options = {});

// Sync on save: the same facts for just these paths (relative, '/'-separated). Ignored paths,
// missing ones and paths reached through a symlinked directory are left out of `entries`; a
// directory is recorded without its contents.
std::expected<ScanResult, std::string> scan_paths(const std::filesystem::path& root, const IgnoreMatcher& ignore,
                                                  FileIndex* index, const std::vector<std::string>& paths,
                                                  const ScanOptions& options = {});

}  // namespace ferry::sync

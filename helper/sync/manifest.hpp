// The remote manifest: what ferry itself last wrote on the remote (path -> hash, size, mtime,
// mode, link target). It is what makes a no-op sync one stat walk plus one tiny round trip,
// what lets deletes touch only files ferry put there, and what conflicts are judged against.
// Persisted as versioned JSON under the project's .ferry/ directory, written atomically.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>

#include "helper/sync/file_meta.hpp"

namespace ferry::sync {

inline constexpr int kManifestVersion = 1;

struct Manifest {
  std::string remote_root;  // the mapping's remote path this manifest describes
  TreeState entries;
  // The agent's sync-state record (epoch, generation) as it stood when `entries` were last
  // known to be the whole of ferry's writes there. Equal to the agent's now: no ferry write
  // since, so a push may plan against `entries` without listing the remote. Empty epoch:
  // unknown, list first. Saved together with `entries`, so a stale file is stale as a whole.
  std::string remote_epoch;
  std::uint64_t remote_generation = 0;

  // Record a successful remote write / delete as it happens, so an interrupted sync resumes.
  void record(const std::string& path, const FileMeta& meta) { entries[path] = meta; }
  void forget(const std::string& path) { entries.erase(path); }
};

std::string manifest_to_json(const Manifest& m);
std::expected<Manifest, std::string> manifest_from_json(std::string_view text);

// A missing file is an empty manifest (first sync).
std::expected<Manifest, std::string> load_manifest(const std::filesystem::path& file);
std::expected<void, std::string> save_manifest(const std::filesystem::path& file, const Manifest& m);

// <project>/.ferry/manifest-<16 hex digits of xxh3(host "\n" remote_root)>.json: one manifest per
// destination, so syncing one project to two boxes never mixes up what was written where.
std::filesystem::path default_manifest_path(const std::filesystem::path& project_root, std::string_view host,
                                            std::string_view remote_root);

}  // namespace ferry::sync

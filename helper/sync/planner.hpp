// The push planner: from the local scan, the manifest of what ferry last wrote and the remote's
// current state, decide every remote change. Pure: no I/O, same inputs give the same plan.
//
// Rules: a remote path that differs from what ferry last wrote there (or that ferry never
// wrote) is a conflict, never overwritten unless `overwrite_conflicts`; deletes touch only
// paths ferry wrote (DeleteMode::owned) or, when mirroring, any remote path the local rules do
// not exclude; protected paths are never written or deleted; many deletes at once are held back
// until confirmed.
#pragma once

#include <cstdint>
#include <optional>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "helper/sync/file_meta.hpp"
#include "helper/sync/ignore_rules.hpp"
#include "helper/sync/manifest.hpp"

namespace ferry::sync {

enum class DeleteMode {
  none,    // never delete on the remote
  owned,   // delete what ferry wrote and the user deleted locally (default)
  mirror,  // `--delete`: also remote-only paths, except excluded and protected ones
};

struct PlanOptions {
  DeleteMode deletes = DeleteMode::owned;
  std::uint64_t delta_min_size = 128u << 10;  // smaller changed files go whole
  // Larger ones go whole too, streamed in chunks: a delta holds the file in memory on both ends
  // (the helper's new version, the agent's base), and a 20 GiB checkpoint must not need 20 GiB.
  std::uint64_t delta_max_size = 2ull << 30;
  const IgnoreMatcher* protect = nullptr;     // remote-only paths (datasets, outputs)
  const IgnoreMatcher* ignore = nullptr;      // local exclude rules: excluded paths are left alone
  std::set<std::string> skip;                 // e.g. files unstable during the scan: untouched
  bool overwrite_conflicts = false;           // `--force`
  bool confirmed_mass_delete = false;
  std::size_t mass_delete_files = 100;        // more deletes than this need confirmation
  double mass_delete_fraction = 0.2;          // ... or more than this share of the remote files
  std::size_t mass_delete_fraction_floor = 5; // (the share rule starts at this many deletes)
  // The share rule's denominator when the plan sees only part of the tree (a save sees just its
  // own paths, so 6 deleted files would be "6 of 6"); 0: the remote files the plan sees.
  std::size_t tree_files = 0;
};

enum class ConflictKind {
  changed_remotely,        // ferry wrote it, someone changed it since, and it changed locally too
  untracked_remote,        // the remote has a different file ferry never wrote
  deleted_locally_changed_remotely,
  kind_mismatch,           // e.g. a directory on the remote where the local side has a file
};

struct Conflict {
  std::string path;
  ConflictKind kind;
  std::string message;
};

struct Transfer {
  std::string path;
  FileMeta local;
  std::optional<FileMeta> remote_base;  // send_delta: the remote file the delta applies to
};

struct Plan {
  std::vector<std::string> replace;       // remote file/symlink removed first: a dir goes there
  std::vector<std::string> mkdirs;        // parents first
  std::vector<Transfer> send_whole;
  std::vector<Transfer> send_delta;
  std::vector<Transfer> symlinks;         // create or retarget
  std::vector<Transfer> metadata;         // content equal: set mode / mtime only
  std::vector<std::string> deletes;       // files and symlinks
  std::vector<std::string> rmdirs;        // deepest first
  std::vector<std::string> held_deletes;  // the mass-delete guard tripped: not to be executed
  std::vector<std::string> held_rmdirs;
  std::vector<Conflict> conflicts;
  std::vector<std::string> adopted;       // already identical remotely: record in the manifest
  std::vector<std::string> forget;        // in the manifest, gone on both sides
  std::vector<std::string> protected_skipped;
  bool needs_confirmation = false;
  std::string confirmation_reason;
  std::size_t unchanged = 0;

  bool nothing_to_do() const;
  std::uint64_t whole_bytes() const;
};

Plan plan_push(const TreeState& local, const Manifest& manifest, const TreeState& remote, const PlanOptions& options);

// Where the laptop has no permission bits worth pushing (Windows: no exec bit), `local` is given
// the modes the box should keep before it is planned: a path's mode on the box when the box has
// the same kind there, 0755 for a new directory, new_file_mode(path) for a new file (the engine's
// reads its #! line). The plan, the transfers and the manifest then all carry the box's modes.
void adopt_box_modes(TreeState& local, const TreeState& remote, const std::function<std::uint32_t(const std::string& path)>& new_file_mode);

// Whether the remote entry is still exactly what ferry wrote (size, mtime, kind, target and,
// when the remote reported one, the hash).
bool remote_matches_manifest(const FileMeta& remote, const FileMeta& written);

}  // namespace ferry::sync

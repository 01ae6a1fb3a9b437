// Typed params and results of the IDE's sync/* methods (sync/push, sync/pull, sync/status,
// sync/flush, sync/fileSaved), with their wire shapes (protocol/spec/protocol.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/json_reader.hpp"

namespace ferry::protocol {

using json = nlohmann::json;

namespace method {
inline constexpr std::string_view kSyncPush = "sync/push";
inline constexpr std::string_view kSyncPull = "sync/pull";
inline constexpr std::string_view kSyncStatus = "sync/status";
inline constexpr std::string_view kSyncFlush = "sync/flush";
inline constexpr std::string_view kSyncFileSaved = "sync/fileSaved";                  // notification
inline constexpr std::string_view kSyncConfirmMassDelete = "sync/confirmMassDelete";  // server -> client request
}  // namespace method

// sync/push's `delete`: which remote files a push may delete.
enum class SyncDeletes { owned, mirror, none };
std::string_view to_string(SyncDeletes d);

struct SyncPushParams {
  std::optional<std::string> path;  // the project (ferry.json or its directory)
  bool dry_run = false;
  bool force = false;
  SyncDeletes deletes = SyncDeletes::owned;
  bool confirm_mass_delete = false;
  std::vector<std::string> paths;  // only these (relative to the mapping); empty = all
};
std::optional<DecodeError> from_json(const json& j, SyncPushParams& out, const std::string& ptr = "");

struct SyncPullParams {
  std::optional<std::string> path;
  std::vector<std::string> paths;  // at least one, relative to the mapping
  bool dry_run = false;
  bool force = false;
};
std::optional<DecodeError> from_json(const json& j, SyncPullParams& out, const std::string& ptr = "");

// sync/status and sync/flush: just the project.
struct SyncProjectParams {
  std::optional<std::string> path;
};
std::optional<DecodeError> from_json(const json& j, SyncProjectParams& out, const std::string& ptr = "");

struct FileSavedParams {
  std::string path;  // absolute, relative to the mapping, or a file:// URI (from `path` or `uri`)
};
std::optional<DecodeError> from_json(const json& j, FileSavedParams& out, const std::string& ptr = "");

struct SyncConflictLine {
  std::string path;
  std::string kind;  // the engine's conflict_name
  std::string message;
};

// The box's disk was full for some writes.
struct SyncNoSpace {
  std::string path;
  std::uint64_t available_bytes = 0, total_bytes = 0, needed_bytes = 0;
  std::size_t failed_paths = 0;
};

// What one push or pull did: sync/push, sync/pull and sync/flush's result, sync/status's
// lastSync, train/start's sync.
struct SyncResult {
  std::uint64_t files_sent = 0;
  std::uint64_t files_deleted = 0;
  std::uint64_t bytes_literal = 0;
  std::uint64_t bytes_matched = 0;
  std::uint64_t bytes_on_wire = 0;
  std::uint64_t dirs_made = 0;
  std::uint64_t metadata_only = 0;
  std::uint64_t unchanged = 0;
  double seconds = 0;
  bool dry_run = false;
  bool cancelled = false;
  std::vector<SyncConflictLine> conflicts;  // `conflicts` is their count, `conflictList` the lines
  std::vector<std::string> held_deletes;
  std::vector<std::string> errors;
  std::vector<std::string> unstable;
  std::string local_scan;
  std::string full_walk_reason;
  std::optional<SyncNoSpace> no_space;
};
json to_json(const SyncResult& r);

struct SyncStatusResult {
  std::vector<std::string> pending_saves;
  bool saving = false;
  std::optional<SyncResult> last_sync;  // null until a push ended
  std::string last_error;               // absent when empty
  bool busy = false;
  std::optional<bool> connected;        // absent without a workspace project
  std::optional<std::string> endpoint;  // the live link's description
};
json to_json(const SyncStatusResult& r);

}  // namespace ferry::protocol

// The sync engine: drives a push (scan, remote listing, plan, transfer, manifest) or a pull over
// any remote::Endpoint (the local sandbox agent or one over SSH). Many requests are in flight at
// once; small files go whole in compressed batches, large changed ones as deltas against the
// helper's copy of what it last sent (else against the agent's signature). Conflicts are
// reported, never overwritten unless forced.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "helper/sync/planner.hpp"
#include "helper/sync/scanner.hpp"
#include "protocol/error.hpp"

namespace ferry::remote {
class Endpoint;
}

namespace ferry::sync {

class TreeWatcher;
class SyncClient;

// Where a push goes and what governs it.
struct SyncTarget {
  std::filesystem::path local_root;   // the mapping's local folder (absolute)
  std::string remote_base;            // directory under the agent's root ("" = the root itself)
  std::string host;                   // for the manifest's name: one manifest per destination
  std::string remote_root;            // the mapping's remote path as configured (same purpose)
  std::vector<std::string> exclude;   // ferry.json exclude
  std::vector<std::string> protect;   // remote-only paths, never written or deleted
  // Folders (relative to local_root) of the project's other mappings nested in this one: theirs
  // alone, never pushed, pulled, watched or deleted through this mapping.
  std::vector<std::string> nested{};
  // Pull only: an absolute directory on the box read as a read-only source instead of
  // remote_base (the agent serves only Python sources from it: protocol/python_sources.hpp).
  // `ferry env sync` mirrors the interpreter's site-packages this way; the box is never written.
  std::string remote_source{};
};

struct SyncOptions {
  DeleteMode deletes = DeleteMode::owned;
  bool force = false;
  bool dry_run = false;
  // Sync on save: only these paths (relative); empty = the whole tree.
  std::vector<std::string> only_paths;
  // Asked when the mass-delete guard trips; false (or unset) keeps the deletes held.
  std::function<bool(const std::string& reason, std::size_t deletes)> confirm_mass_delete;
  // done / total bytes of this sync's transfers, called from worker threads.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
  // Polled between requests (and between the pages of a remote listing): true stops the sync
  // after the requests in flight (the manifest still records what was written, so the next sync
  // resumes).
  std::function<bool()> cancelled;
  // Called once when another process (or engine) is syncing the same folder and this one waits
  // its turn (helper/sync/project_lock.hpp), with who that is: "ferry serve (pid 123)".
  std::function<void(const std::string& holder)> waiting;
  // Remote entries listed so far, after each page of a listing (a big remote tree takes a while:
  // the user sees it move instead of waiting in silence).
  std::function<void(std::uint64_t listed)> listing_progress;
  // A remote listing comes in pages of at most this many entries, or about a second of the
  // agent's walk, whichever ends first; cancellation is seen between pages.
  std::size_t list_page_entries = 50'000;
  // Called once after planning, before any file is read: the moment a user's edit races the
  // sync (tests change the tree here).
  std::function<void()> before_transfer;
  // Pull only: called once with every file the listing offers (path, size) before anything is
  // planned; the paths it returns are left out of this pull (the env mirror's size cap).
  std::function<std::set<std::string>(const std::vector<std::pair<std::string, std::uint64_t>>& files)> pull_leave_out;
  // Pull only: the local tree is a mirror ferry owns. A file an earlier pull brought that the
  // remote no longer has (or that pull_leave_out left out) is deleted locally, if it is still
  // what ferry wrote; one changed locally is a conflict and stays.
  bool pull_mirror = false;
  // Pull only: the local side holds names as Windows does (helper/sync/windows_names.hpp). A
  // remote name it cannot hold (aux.py, a:b, x.) or two that differ only in case are per-file
  // errors, never written, never renamed; the rest of the pull goes on. On in Windows builds.
#ifdef _WIN32
  bool windows_local_names = true;
#else
  bool windows_local_names = false;
#endif
  // Push only: the local side's permission bits are what the box gets. Off in Windows builds
  // (Windows has no exec bit): the box keeps the mode of a file it has, a new directory is 0755,
  // a new file 0644, or 0755 when it starts with #! (helper/sync/new_file_mode.hpp).
#ifdef _WIN32
  bool local_modes = false;
#else
  bool local_modes = true;
#endif
  unsigned in_flight = 8;              // concurrent requests to the agent
  std::uint64_t cache_max_bytes = 1ull << 30;  // the sent-copy cache used as delta bases
  std::uint64_t stream_above = 64ull << 20;    // whole files larger than this go in chunks
  // Lanes that only save CPU per byte (an OpenSSH lane on a short link) cost a login, about
  // 0.3 core-seconds here, and save about 0.6 per GiB: files under this go over the link (a
  // 256 MiB file in an initial sync was 0.1-0.5 s slower with the lane). Window lanes (a long
  // link) do not depend on it.
  std::uint64_t cpu_lanes_above = 512ull << 20;
  // An edit that keeps a file of this size or more the same size: the receiving side copies the
  // old file while the delta is made and sent (push: sync/prepareDelta; pull: BaseCopy), then
  // writes only what changed into that copy.
  std::uint64_t prepare_above = 64ull << 20;
};

struct SyncSummary {
  std::uint64_t files_sent = 0;      // whole, delta, symlinks (pull: files received)
  std::uint64_t files_deleted = 0;
  std::uint64_t bytes_literal = 0;   // bytes that had to travel (before compression)
  std::uint64_t bytes_matched = 0;   // bytes the remote reused from its old copy
  std::uint64_t bytes_on_wire = 0;   // payload actually sent/received: compressed data, deltas, signatures
  std::uint64_t dirs_made = 0;
  std::uint64_t metadata_only = 0;
  std::uint64_t unchanged = 0;
  double seconds = 0;
  bool dry_run = false;
  bool cancelled = false;
  std::vector<Conflict> conflicts;
  std::vector<std::string> held_deletes;  // the mass-delete guard held these
  std::vector<std::string> errors;        // per-file failures; the rest of the sync went on
  std::vector<std::string> unstable;      // changed while being read: next sync
  // How the local tree was read: "full" (a walk), "prepared" (a walk done by prepare_push while
  // connecting), "paths" (only what the watcher saw change), "none" (the watcher saw nothing:
  // the tree is what the last push read).
  std::string local_scan = "full";
  std::string full_walk_reason;  // why a watched engine walked anyway ("" when it did not)
  // The box's disk (or the user's quota) was full for some writes: the agent's statvfs of the
  // mapping root and what this push writes, so the message can say how much room is missing.
  struct NoSpace {
    std::string path;                 // the mapping root on the box
    std::uint64_t available_bytes = 0, total_bytes = 0;
    std::uint64_t needed_bytes = 0;   // what this push writes (each file lands as a whole new copy)
    std::size_t failed_paths = 0;
  };
  std::optional<NoSpace> no_space;

  // The wire JSON is server::to_json (helper/server/sync_result.hpp).
  std::string one_line() const;  // "12 files sent, 0 deleted, 0 conflicts, 1.2 MiB literal, ..."
};

// One engine per mapping, meant to live as long as its endpoint: the manifest, the hash index
// and the ignore rules stay in memory across pushes (a save costs a few stats, not a reload),
// and are persisted in the background, coalesced, and on destruction (see persist_now).
class SyncEngine {
 public:
  SyncEngine(remote::Endpoint& endpoint, SyncTarget target);
  ~SyncEngine();  // persists what changed
  SyncEngine(const SyncEngine&) = delete;
  SyncEngine& operator=(const SyncEngine&) = delete;

  // Errors carry their kind (protocol/error.hpp): an agent's or endpoint's as its code says
  // (agent_lost when the link went away), local reads and writes io, bad pull paths
  // invalid_input, a cancelled wait for the project's lock cancelled. A cancelled push or pull
  // is no error: its summary says cancelled.
  std::expected<SyncSummary, Error> push(const SyncOptions& options);
  // The local half of a full push, done ahead: loads the rules, index and manifest and walks
  // the tree. The next push with the same options plans from this walk instead of walking
  // again; `ferry sync` runs it while the link connects, as tar | ssh reads while ssh does.
  // Safe because a push never trusts a walk's sizes and times beyond what the send re-checks.
  // Nothing for an engine with a watch (it has its own read of the tree).
  void prepare_push(const SyncOptions& options);
  // Brings these remote paths (files or directories, relative to the mapping) into the local
  // tree. A local file changed since ferry last synced it is a conflict unless forced.
  std::expected<SyncSummary, Error> pull(const std::vector<std::string>& paths, const SyncOptions& options);

  std::filesystem::path manifest_path() const;
  const SyncTarget& target() const { return target_; }
  // Writes the manifest and the index now if they changed since they were last written.
  void persist_now();
  // Stops the background writer and persists what changed: what the destructor does first.
  // A one-shot command calls it and may then end the process without freeing the engine.
  void finish();
  // How long a change waits for more before the background writer persists it.
  void set_persist_delay(std::chrono::milliseconds delay);
  // For an engine that lives on (`ferry serve`): watches the local tree with inotify, so a full
  // push after one that read the tree re-reads only what changed, and a no-op walks nothing.
  // Without it (or after any doubt about the watch) every full push walks the tree.
  std::expected<void, Error> watch_local_tree();
  // Tests: the live watcher (nullptr when none).
  TreeWatcher* watcher_for_test();

 private:
  struct State;
  struct PushRun;  // one push's state, passed from stage to stage (sync_engine.cpp)
  std::expected<SyncSummary, Error> push_locked(const SyncOptions& options);
  // The push's stages, in order (their comments in sync_engine.cpp say why each does what).
  std::expected<void, Error> push_read_local(PushRun& run);
  void take_watched_changes(PushRun& run);
  std::expected<void, Error> push_read_remote(PushRun& run);
  std::expected<void, Error> read_stamp(PushRun& run);
  std::expected<void, Error> list_remote(PushRun& run);
  std::expected<void, Error> hash_listed(PushRun& run);
  std::expected<void, Error> push_plan(PushRun& run);
  std::expected<void, Error> refresh_box_modes(PushRun& run);
  std::uint64_t push_transfer(PushRun& run);
  void push_commit_manifest(PushRun& run, std::uint64_t mutations);
  void warm_bulk_lanes(const PushRun& run);
  void trim_sent_cache(const SyncOptions& options);
  void load_index(State& st);
  std::expected<void, Error> load_local_state(State& st);
  std::expected<ScanResult, Error> walk_for_push(State& st, const SyncOptions& options);
  remote::Endpoint& endpoint_;
  std::unique_ptr<SyncClient> client_;  // endpoint_'s agent sync methods (and its bulk lanes), typed
  SyncTarget target_;
  std::unique_ptr<State> state_;
};

}  // namespace ferry::sync

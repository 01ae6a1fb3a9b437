// The runs' state dir on the box: DIR/runs/<id>/ with meta.json, output.log, the stdin and
// control FIFOs and exit.json. Everything a later agent needs to find, list and stream a run
// is in these files, so runs outlive the agent that started them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::agent::run {

namespace fs = std::filesystem;
using json = nlohmann::json;

// $XDG_CACHE_HOME/ferry/state, else ~/.cache/ferry/state.
fs::path default_state_dir();

// "YYYYMMDD-HHMMSS-xxxx": UTC start time and 4 random hex digits, sortable by start.
bool valid_run_id(std::string_view id);

// ISO-8601 UTC with milliseconds: "2026-11-30T02:10:11.123Z".
std::string iso_utc_ms(std::chrono::system_clock::time_point t);

struct RunFiles {
  std::string id;
  fs::path dir;
  fs::path meta() const { return dir / "meta.json"; }
  fs::path output() const { return dir / "output.log"; }
  fs::path stdin_fifo() const { return dir / "stdin"; }
  // Lines "eof" and "resize COLS ROWS" from the agent to the supervisor (see docs/architecture.md).
  fs::path control_fifo() const { return dir / "control"; }
  fs::path exit() const { return dir / "exit.json"; }
  // What the supervisor is to start, env values included; 0600, deleted once read.
  fs::path spec() const { return dir / "spec.json"; }
  fs::path supervisor_log() const { return dir / "supervisor.log"; }
  // Held shared (flock) by every agent streaming the run, so anyone can tell whether a ferry still
  // follows it; the kernel drops the lock with the agent, however it ends.
  fs::path follow_lock() const { return dir / "follow.lock"; }
};

class RunStore {
 public:
  explicit RunStore(fs::path state_dir) : state_dir_(std::move(state_dir)) {}
  const fs::path& state_dir() const { return state_dir_; }
  fs::path runs_dir() const { return state_dir_ / "runs"; }

  // A fresh, empty run directory (the id is retried on a clash).
  std::expected<RunFiles, std::string> create(std::chrono::system_clock::time_point now) const;
  // An existing run; the id is checked before it touches a path.
  std::expected<RunFiles, std::string> find(std::string_view id) const;
  // Every run directory's id, newest first; with `unended_only`, those with no exit.json yet.
  std::vector<std::string> ids(bool unended_only = false) const;

 private:
  fs::path state_dir_;
};

struct RunStatus {
  json meta;
  std::optional<json> exit;
  std::string state;  // "running" | "exited" | "lost"
};

// nullopt while meta.json is not written yet (a run still starting, or one that failed to).
std::optional<RunStatus> read_status(const RunFiles& run);

// kill(pid, 0) plus /proc: not a zombie, and its command line is the supervisor of this run.
bool supervisor_alive(long long pid, std::string_view id);

std::optional<json> read_json_file(const fs::path& path);
// When the bytes of write_json_atomic reach the disk: before the rename (durable once visible),
// after it (visible at once, on disk a moment later: what a waiting reader should see first), or
// never asked (a file that lives for milliseconds, as a run's spec.json).
enum class Sync { before_rename, after_rename, none };
// temp file in the same directory + rename: readers see the old file or the new one.
bool write_json_atomic(const fs::path& path, const json& value, mode_t mode = 0600, Sync sync = Sync::before_rename);
// fsync of a file written with Sync::none, once whoever waited for it has been answered.
bool sync_file(const fs::path& path);

}  // namespace ferry::agent::run

// The box's Python packages mirrored for the editor: each site entry of the interpreter's
// sys.path is pulled by the sync engine from a read-only source (Python sources, stubs and
// metadata only: protocol/python_sources.hpp) into a local cache per (host, interpreter),
// ~/.cache/ferry/env/<host>-<hash>/, so a second sync moves only what changed. A size cap
// (default 2 GiB) leaves the largest packages out and names them. Then a local venv under the
// project's .ferry/ gets a .pth naming the mirror, which PyCharm, VS Code, pyright and jedi
// all read. Nothing is written on the box.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "helper/env/env_probe.hpp"

namespace ferry::remote {
class Endpoint;
}

namespace ferry::env {

inline constexpr std::uint64_t kDefaultMirrorCap = 2ull << 30;

struct EnvSyncOptions {
  std::string host;         // as ferry resolved it: one cache per host...
  std::string interpreter;  // ...and interpreter
  std::filesystem::path cache_root;  // empty: default_cache_root()
  std::uint64_t cap_bytes = kDefaultMirrorCap;
  std::function<bool()> cancelled;
  std::function<void(const std::string& remote_path)> entry_started;
};

struct MirroredEntry {
  std::string remote;  // the sys.path entry on the box
  std::string local;   // its mirror
  std::uint64_t files = 0, bytes = 0;
};

struct EnvSyncReport {
  std::filesystem::path mirror;
  std::vector<MirroredEntry> entries;
  std::uint64_t files_received = 0, files_deleted = 0, files_unchanged = 0, bytes_on_wire = 0;
  std::uint64_t files_total = 0, bytes_total = 0;  // what the mirror holds now
  std::vector<std::pair<std::string, std::uint64_t>> left_out;  // packages over the cap, largest first
  std::vector<std::string> errors;
  std::vector<std::string> conflicts;
  double seconds = 0;
  bool cancelled = false;

  nlohmann::json to_json() const;
  // to_json's document back (a riding `ferry env sync` gets it from the live ferry); missing
  // fields stay empty.
  static EnvSyncReport from_json(const nlohmann::json& j);
  std::string one_line() const;
};

// $XDG_CACHE_HOME/ferry/env, else ~/.cache/ferry/env.
std::filesystem::path default_cache_root();
// <cache_root>/<host, made path-safe>-<16 hex digits of xxh3(host "\n" interpreter)>.
std::filesystem::path mirror_dir(const std::filesystem::path& cache_root, const std::string& host, const std::string& interpreter);

// The size cap over one pull's offer: nothing when `files` (path, size) fit in `budget`; else
// the files of the largest packages (python_package_of), dropped largest first until the rest
// fits. `dropped` gets each package left out with its size.
std::set<std::string> leave_out_over_cap(const std::vector<std::pair<std::string, std::uint64_t>>& files, std::uint64_t budget,
                                         std::vector<std::pair<std::string, std::uint64_t>>& dropped);

// Mirrors `info`'s site entries from the endpoint's box, then writes <mirror>/mirror.json (the
// report, the info and when) for `ferry doctor` and the venv. One entry's failed pull is in the
// report's errors (the others still mirror), except when the agent went away: the others cannot
// mirror either, so that is the error (agent_lost); io when the mirror folder cannot be made.
std::expected<EnvSyncReport, Error> sync_env(remote::Endpoint& endpoint, const EnvInfo& info, const EnvSyncOptions& options);

// What the last sync left in <mirror>/mirror.json (nullopt: never synced).
struct MirrorState {
  std::filesystem::path mirror;
  std::int64_t synced_at = 0;  // unix seconds
  std::uint64_t files = 0, bytes = 0;
  std::vector<std::string> local_paths;  // in sys.path order
  std::vector<std::pair<std::string, std::uint64_t>> left_out;
  std::optional<EnvInfo> info;
};
std::optional<MirrorState> read_mirror_state(const std::filesystem::path& mirror);

// `ferry doctor`'s line about the mirror: pass with its size and age, warn when there is none,
// when it is a week old, or when the cap left packages out.
struct MirrorCheck {
  std::string status;  // "pass" or "warn"
  std::string detail;
  std::string fix;
};
MirrorCheck mirror_check(const std::optional<MirrorState>& state, std::int64_t now_unix_s);

// <project>/.ferry/venv: made once with `local_python -m venv --without-pip` (no packages, no
// system site-packages), then given ferry-box-env.pth naming the mirror's entries. Returns the
// venv's python (what an editor selects as the project interpreter).
std::expected<std::filesystem::path, std::string> write_project_venv(const std::filesystem::path& project_root,
                                                                     const MirrorState& state,
                                                                     const std::string& local_python = "python3");
std::filesystem::path project_venv_python(const std::filesystem::path& project_root);

}  // namespace ferry::env

// Autostop's state on the box, under STATE/autostop/: what is armed (settings.json), what the
// watchdog last saw (status.json), what happened (events.jsonl), and STATE/agents/<pid>, one
// file per agent serving a helper. All of it is files, so the watchdog, a restarted agent and the
// helper's `ferry autostop --status` agree without any of them being alive at the same time.
#pragma once

#include <chrono>
#include <expected>
#include <vector>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ferry::agent::autostop {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct Settings {
  double idle_seconds = 1800;
  std::string action = "stop";  // "stop" | "notify" | "command"
  std::string command;          // action "command"
  std::string pre_stop;         // run before the action
  int gpu_util_below = 5;       // percent
  std::string armed_at;         // ISO-8601 UTC
  // Set by the agent, not the wire: the redacted webhook URL when one was given at arm time (the
  // URL itself never reaches a file), and the id of the watchdog that holds it: an older
  // watchdog seeing another id hands over and exits.
  std::string webhook_to;
  std::string watchdog_id;
};
json to_json(const Settings& s);
// Validates the wire/file shape; the error names the field.
std::expected<Settings, std::string> settings_from_json(const json& j);

struct Paths {
  fs::path state_dir;
  fs::path dir() const { return state_dir / "autostop"; }
  fs::path settings() const { return dir() / "settings.json"; }
  fs::path status() const { return dir() / "status.json"; }
  fs::path events() const { return dir() / "events.jsonl"; }
  fs::path lock() const { return dir() / "watchdog.lock"; }
  fs::path log() const { return dir() / "watchdog.log"; }
  fs::path agents() const { return state_dir / "agents"; }
};

std::optional<Settings> read_settings(const Paths& p);
bool write_settings(const Paths& p, const Settings& s);  // atomic
bool remove_settings(const Paths& p);
// One JSON line {at, event, ...detail} appended (O_APPEND, one write).
void record_event(const Paths& p, const std::string& event, json detail = json::object());
std::optional<json> last_event(const Paths& p);

// Marks this process as an agent serving a helper for as long as it lives (STATE/agents/<pid>).
class ConnectionMark {
 public:
  explicit ConnectionMark(const Paths& p);
  ~ConnectionMark();
  ConnectionMark(const ConnectionMark&) = delete;
  ConnectionMark& operator=(const ConnectionMark&) = delete;

 private:
  fs::path file_;
};
// Live agents other than `except_pid` (stale marks of dead agents are removed).
int live_connections(const Paths& p, long long except_pid = 0);
// Runs in STATE/runs whose supervisor is alive.
int live_runs(const fs::path& state_dir);

// What keeps the box busy now ("2 live runs", "a helper is connected", "GPU 0 at 87 %"), or
// nullopt when it is idle. `gpu_util` gives each GPU's utilization (empty without a driver).
using GpuUtil = std::function<std::vector<double>()>;
std::optional<std::string> busy_reason(const Paths& p, const Settings& s, const GpuUtil& gpu_util, long long except_pid = 0);

// The action's shell command: "stop" -> shutdown -h now (sudo -n unless root), "command" -> the
// command, "notify" -> none.
std::optional<std::string> action_command(const Settings& s);

}  // namespace ferry::agent::autostop

// Spot interruptions: `ferry-agent --spot-watch STATE_DIR` (a hidden mode, double-forked like the
// autostop watchdog, one per state dir) polls a notice source every second — AWS's
// instance-action metadata URL, GCP's preemption URL, any URL, or a file — and on a notice sends
// SIGTERM to the process groups of the live runs that run ferry-train (which checkpoints within
// the notice period and exits 143), records it in STATE/spot/events.jsonl and notice.json, and
// stops watching. Settings in STATE/spot/settings.json; spot/watch, spot/cancel, spot/status.
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/binding_table.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::agent::spot {

namespace fs = std::filesystem;
using json = nlohmann::json;

inline constexpr const char* kAwsNoticeUrl = "http://169.254.169.254/latest/meta-data/spot/instance-action";
inline constexpr const char* kGcpNoticeUrl = "http://169.254.169.254/computeMetadata/v1/instance/preempted";

struct Source {
  std::string kind = "aws";  // "aws" | "gcp" | "url" | "file"
  std::string url;           // aws/gcp: the defaults above; "url": any http:// URL (200 = notice)
  std::string path;          // "file": a notice is the file existing
  double poll_seconds = 1;
};
std::expected<Source, std::string> source_from_json(const json& j);
json to_json(const Source& s);

// A plain-HTTP GET (metadata endpoints are http on a link-local or loopback address), 2 s limit:
// {status, body} or why not. `header` is sent as is when not empty.
std::expected<std::pair<int, std::string>, std::string> http_get(const std::string& url, const std::string& header = "");

// One look at the source: the notice's text when there is one.
std::optional<std::string> check_notice(const Source& s);

// The live runs whose command is ferry-train: (id, process group), the ones a notice stops.
std::vector<std::pair<std::string, long long>> training_runs(const fs::path& state_dir);

int watch(const fs::path& state_dir);  // watcher side
bool ensure_watcher(const fs::path& state_dir);  // agent side: start one if settings exist
std::optional<protocol::Response> handle_spot_method(const protocol::Request& request, const fs::path& state_dir);
// Binds spot/watch, spot/cancel and spot/status into the agent's table (raw params).
void bind_spot_methods(protocol::BindingTable& table, const fs::path& state_dir);

}  // namespace ferry::agent::spot

// gpu/status: see gpu_methods.hpp.
#include "remote-runtime/agent/gpu_methods.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "remote-runtime/agent/gpu_query.hpp"
#include "remote-runtime/agent/host_stats.hpp"
#include "remote-runtime/agent/raw_binding.hpp"
#include "remote-runtime/agent/run/run_store.hpp"

namespace ferry::agent {

namespace {

using json = nlohmann::json;

// Rates need two readings: a monitor polling at 1 Hz gets them against its previous call; a
// first call (or one long after the last) reads twice, 250 ms apart.
json host_now(const std::filesystem::path& proc) {
  static std::mutex mutex;
  static std::optional<HostCounters> last;
  std::lock_guard lock(mutex);
  HostCounters now = read_host_counters(proc);
  if (!last || now.at - last->at > std::chrono::seconds(5) || now.at - last->at < std::chrono::milliseconds(100)) {
    last = now;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    now = read_host_counters(proc);
  }
  json out = host_stats_json(*last, now);
  last = now;
  return out;
}

// pid -> (process group, command line) from /proc.
std::optional<long long> pgid_of(const std::filesystem::path& proc, long long pid) {
  std::ifstream in(proc / std::to_string(pid) / "stat");
  std::string text;
  std::getline(in, text);
  auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 2));
  std::string state;
  long long ppid = 0, pgid = 0;
  if (!(rest >> state >> ppid >> pgid)) return std::nullopt;
  return pgid;
}

std::string command_of(const std::filesystem::path& proc, long long pid) {
  std::ifstream in(proc / std::to_string(pid) / "cmdline");
  std::string raw((std::istreambuf_iterator<char>(in)), {});
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  std::replace(raw.begin(), raw.end(), '\0', ' ');
  return raw.size() > 200 ? raw.substr(0, 200) + "..." : raw;
}

// Process group -> run id of the live runs (each run is its own process group).
std::map<long long, std::string> run_groups(const std::filesystem::path& state_dir) {
  std::map<long long, std::string> out;
  if (state_dir.empty()) return out;
  run::RunStore store(state_dir);
  for (const auto& id : store.ids(/*unended_only=*/true)) {
    auto files = store.find(id);
    if (!files) continue;
    auto status = run::read_status(*files);
    if (status && status->state == "running") out[status->meta.value("pgid", 0LL)] = id;
  }
  return out;
}

void annotate_processes(json& gpus, const GpuMethodOptions& o) {
  std::optional<std::map<long long, std::string>> groups;
  for (auto& g : gpus) {
    if (!g.contains("processes")) continue;
    if (!groups) groups = run_groups(o.state_dir);
    for (auto& p : g["processes"]) {
      long long pid = p["pid"].get<long long>();
      std::string command = command_of(o.proc, pid);
      if (!command.empty()) p["command"] = command;
      if (auto pgid = pgid_of(o.proc, pid); pgid && groups->contains(*pgid)) p["runId"] = groups->at(*pgid);
    }
  }
}

}  // namespace

std::optional<protocol::Response> handle_gpu_method(const protocol::Request& request, const GpuMethodOptions& o) {
  if (request.method != "gpu/status") return std::nullopt;
  json host = host_now(o.proc);
  // Asked per call: a driver installed after the agent started is seen.
  auto gpus = query_gpus(o.nvidia_smi);
  if (!gpus) {
    return protocol::make_result(
        request.id, json{{"available", false},
                         {"reason", "no NVIDIA GPU visible: " + gpus.error() +
                                        " (no NVIDIA driver on this machine, or it is not working)"},
                         {"host", std::move(host)}});
  }
  annotate_processes(*gpus, o);
  json result{{"available", true}, {"gpus", *gpus}, {"host", host}};
  if (auto hint = bottleneck_hint(*gpus, host["cpu"]["percent"].get<double>())) result["hint"] = *hint;
  return protocol::make_result(request.id, std::move(result));
}

void bind_gpu_methods(protocol::BindingTable& table, GpuMethodOptions options) {
  bind_raw_family(table, {"gpu/status"},
                  [options = std::move(options)](const protocol::Request& r) { return handle_gpu_method(r, options); });
}

}  // namespace ferry::agent

// `ferry gpu [--watch] [--json]`: the host's GPUs (utilization, memory, temperature, power,
// clocks, the processes on each and the ferry run they belong to) with its CPUs, memory, disk
// and network, as nvidia-smi and htop would show them side by side; --watch redraws every
// second. No NVIDIA driver is an answer ("no NVIDIA GPU visible"), not an error.
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "helper/cli/commands.hpp"
#include "helper/cli/relay_endpoint.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cloud/cost_estimate.hpp"

namespace ferry::cli {

namespace {

using json = nlohmann::json;

struct GpuOptions {
  bool watch = false, as_json = false;
  double interval = 1.0;
  int count = 0;  // 0 = until Ctrl-C
};

std::string bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.1f} {}", b, units[u]);
}

template <class T>
std::string opt(const json& j, const char* key, const char* fmt_str) {
  return j.contains(key) ? fmt::format(fmt::runtime(fmt_str), j[key].get<T>()) : "-";
}

std::string render(const json& s, const std::string& where, const std::optional<double>& usd_per_hour) {
  std::string out;
  if (!s.value("available", false)) {
    std::string reason = s.value("reason", std::string("NVML not available"));
    if (reason.starts_with("no NVIDIA GPU visible: ")) reason.erase(0, 23);
    out += "no NVIDIA GPU visible on " + where + " (" + reason + ")\n";
  } else {
    out += fmt::format("{:<3} {:<26} {:>5} {:>21} {:>6} {:>7} {:>11}\n", "GPU", "NAME", "UTIL", "MEMORY", "TEMP", "POWER", "SM/MEM MHz");
    for (const auto& g : s["gpus"]) {
      std::string mem = g.contains("mem_total_bytes")
                            ? bytes(g.value("mem_used_bytes", 0.0)) + " / " + bytes(g["mem_total_bytes"].get<double>()) : "-";
      std::string clocks = g.contains("sm_clock_mhz") ? fmt::format("{}/{}", g["sm_clock_mhz"].get<int>(), g.value("mem_clock_mhz", 0)) : "-";
      out += fmt::format("{:<3} {:<26} {:>5} {:>21} {:>6} {:>7} {:>11}\n", g.value("index", 0), g.value("name", std::string("?")),
                         opt<double>(g, "util_percent", "{:.0f} %"), mem, opt<double>(g, "temp_c", "{:.0f} C"),
                         opt<double>(g, "power_w", "{:.0f} W"), clocks);
      for (const auto& p : g.value("processes", json::array()))
        out += fmt::format("    pid {:<8} {:>10}  {:<20}  {}\n", p.value("pid", 0LL),
                           p.contains("used_bytes") ? bytes(p["used_bytes"].get<double>()) : "-",
                           p.value("runId", std::string("")), p.value("command", std::string("")).substr(0, 80));
    }
  }
  if (s.contains("host")) {
    const auto& h = s["host"];
    std::string cores;
    for (const auto& c : h["cpu"]["perCore"]) cores += fmt::format(" {:.0f}", c.get<double>());
    out += fmt::format("CPU {:.0f} % (per core:{})   load {}\n", h["cpu"]["percent"].get<double>(), cores, h.value("loadavg", std::string("-")));
    out += fmt::format("MEM {} / {}   DISK read {}/s write {}/s   NET rx {}/s tx {}/s\n",
                       bytes(h["memory"]["usedBytes"].get<double>()), bytes(h["memory"]["totalBytes"].get<double>()),
                       bytes(h["disk"]["readBytesPerSec"].get<double>()), bytes(h["disk"]["writeBytesPerSec"].get<double>()),
                       bytes(h["net"]["rxBytesPerSec"].get<double>()), bytes(h["net"]["txBytesPerSec"].get<double>()));
  }
  if (usd_per_hour) out += "host price " + cloud::format_rate(*usd_per_hour) + " (ferry.json); `ferry runs` shows each run's cost\n";
  if (s.contains("hint")) out += "hint: " + s["hint"].get<std::string>() + "\n";
  return out;
}

int run_gpu(const GlobalOptions& g, const GpuOptions& o) {
  const std::string who = "ferry gpu";
  auto project = cli_project_or_usage(g, who);
  if (!project) return project.error();
  std::optional<double> usd_per_hour;
  if (project->price) {
    auto catalog = cloud::effective_catalog(project->gpu_catalog);
    if (auto rate = catalog ? cloud::host_rate(*project->price, *catalog) : std::unexpected(catalog.error()))
      usd_per_hour = cloud::billed_usd_per_hour(*rate, *project->price);
  }
  // Through the project's live ferry when there is one (no login); else a link of its own.
  auto opened = agent_endpoint(g, *project, who);
  if (!opened) return opened.error();
  std::unique_ptr<remote::Endpoint> endpoint = std::move(*opened);
  const std::string host = project->host;
  const bool redraw = o.watch && !o.as_json && ::isatty(STDOUT_FILENO);
  auto stopped = o.watch ? stop_on_ctrl_c() : std::function<bool()>([] { return false; });
  for (int n = 1;; ++n) {
    auto status = endpoint->call("gpu/status", json::object());
    if (!status) {
      std::cerr << who << ": " << status.error().message << "\n";
      return exit_status::kFailed;
    }
    if (usd_per_hour) (*status)["usdPerHour"] = *usd_per_hour;
    if (o.as_json) std::cout << status->dump(o.watch ? -1 : 2) << std::endl;
    else std::cout << (redraw ? "\x1b[H\x1b[2J" : (n > 1 ? "\n" : "")) << render(*status, host, usd_per_hour) << std::flush;
    if (!o.watch || (o.count > 0 && n >= o.count)) break;
    // Sleep in slices so Ctrl-C ends the watch at once.
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.interval);
    while (!stopped() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (stopped()) break;
  }
  endpoint->close();
  return exit_status::kOk;
}

}  // namespace

void add_gpu_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<GpuOptions>();
  auto* cmd = app.add_subcommand("gpu", "The host's GPUs, their processes and runs, with CPU, memory, disk and network (nvidia-smi + htop)");
  cmd->add_flag("--watch,-w", o->watch, "Redraw every second until Ctrl-C");
  cmd->add_flag("--json", o->as_json, "Print gpu/status's JSON (with --watch: one object per line)");
  cmd->add_option("--interval", o->interval, "Seconds between samples with --watch (default 1)")->check(CLI::Range(0.2, 3600.0));
  cmd->add_option("--count", o->count, "With --watch: stop after this many samples")->check(CLI::PositiveNumber);
  cmd->footer("No NVIDIA driver on the host: \"no NVIDIA GPU visible\" and exit status 0.\n"
              "hint: lines name an input-bound job (GPU under 70 % while the CPUs are saturated) and what to do.");
  cmd->fallthrough();
  cmd->callback([&g, o] { g.exit_code = run_gpu(g, *o); });
}

}  // namespace ferry::cli

// `ferry advise`'s arithmetic: see gpu_advice.hpp.
#include "helper/cloud/gpu_advice.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "protocol/json_parse.hpp"

namespace ferry::cloud {

using json = nlohmann::json;

namespace {
constexpr double kMemoryMargin = 1.2;  // allocator fragmentation, a longer sequence, a bigger eval batch
constexpr double kTimeMargin = 1.1;    // start-up, checkpoints, evaluation
constexpr double kGiB = 1024.0 * 1024 * 1024;
}  // namespace

std::expected<RunMeasure, std::string> measure_from_events(const std::string& jsonl) {
  RunMeasure m;
  std::vector<double> step_times;
  std::istringstream in(jsonl);
  std::string line;
  int events = 0;
  while (std::getline(in, line)) {
    json e = protocol::parse_json_text(line).value_or(json());
    if (!e.is_object() || !e.contains("event")) continue;
    ++events;
    const std::string kind = e.value("event", "");
    if (kind == "start") m.total_steps = e.value("total_steps", std::int64_t{0});
    if (kind == "step") {
      if (e.contains("step_time_s") && e["step_time_s"].is_number()) step_times.push_back(e["step_time_s"].get<double>());
      for (const auto& g : e.value("gpus", json::array())) {
        m.peak_bytes = std::max(m.peak_bytes, g.value("mem_used_bytes", std::uint64_t{0}));
        if (g.contains("mem_total_bytes")) m.measured_vram_bytes = g["mem_total_bytes"].get<std::uint64_t>();
      }
    }
    if (kind == "auto_batch")
      for (const auto& p : e["result"].value("probes", json::array()))
        if (p.value("fits", false)) m.peak_bytes = std::max(m.peak_bytes, p.value("peak_bytes", std::uint64_t{0}));
  }
  if (events == 0) return std::unexpected("no ferry-train events in it (save them with `ferry train CONFIG --json > events.jsonl`)");
  if (step_times.empty() || m.total_steps <= 0)
    return std::unexpected("no step timings or total_steps in the events (the run must have logged at least one step)");
  std::sort(step_times.begin(), step_times.end());
  m.step_time_s = step_times[step_times.size() / 2];
  if (m.peak_bytes == 0)
    return std::unexpected("no GPU memory in the events (a CPU run): give --peak-mem GIB measured on a GPU");
  return m;
}

Advice advise(const RunMeasure& m, const std::vector<GpuOffer>& catalog, std::optional<std::uint64_t> laptop_vram_bytes) {
  Advice a;
  a.hours = m.hours() * kTimeMargin;
  a.needed_bytes = static_cast<std::uint64_t>(std::ceil(static_cast<double>(m.peak_bytes) * kMemoryMargin));
  for (const auto& o : catalog)
    if (o.gpu_memory_gib * kGiB >= static_cast<double>(a.needed_bytes)) a.fits.push_back(estimate(rate_of(o), a.hours));
  std::stable_sort(a.fits.begin(), a.fits.end(),
                   [](const CostEstimate& x, const CostEstimate& y) { return x.on_demand_cents < y.on_demand_cents; });
  if (laptop_vram_bytes && *laptop_vram_bytes > 0) {
    const double share = static_cast<double>(m.peak_bytes) / static_cast<double>(*laptop_vram_bytes);
    std::vector<std::string> why;
    if (m.hours() > 2) why.push_back(fmt::format("the run takes {:.1f} h (over 2 h)", m.hours()));
    if (share > 0.7) why.push_back(fmt::format("it needs {:.0f} % of the laptop GPU's memory (over 70 %)", share * 100));
    a.laptop = why.empty() ? fmt::format("a laptop GPU of {:.1f} GiB is still enough ({:.1f} h, {:.0f} % of its memory)",
                                         static_cast<double>(*laptop_vram_bytes) / kGiB, m.hours(), share * 100)
                           : "a laptop GPU of " + fmt::format("{:.1f} GiB", static_cast<double>(*laptop_vram_bytes) / kGiB) +
                                 " is no longer enough: " + why.front() + (why.size() > 1 ? ", and " + why.back() : "");
  }
  return a;
}

}  // namespace ferry::cloud

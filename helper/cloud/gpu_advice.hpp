// `ferry advise`: from a ferry-train run's measured peak GPU memory and step time, the cheapest
// catalog offers that fit with margin, their cost for the whole run, and whether a laptop GPU is
// still enough (runs over 2 h, or memory over 70 % of its VRAM, say no).
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "helper/cloud/cost_estimate.hpp"

namespace ferry::cloud {

// What a run measured (from ferry-train's JSON-lines events, or given by hand).
struct RunMeasure {
  std::uint64_t peak_bytes = 0;      // the largest GPU memory in use
  double step_time_s = 0;            // median wall time per optimizer step
  std::int64_t total_steps = 0;      // steps of the whole run
  std::optional<std::uint64_t> measured_vram_bytes;  // the GPU it ran on, when known
  double hours() const { return step_time_s * static_cast<double>(total_steps) / 3600.0; }
};

// Reads ferry-train's events (`ferry train --json`, or the run's output): start (total_steps),
// step (step_time_s, gpus[].mem_used_bytes/mem_total_bytes), auto_batch (probe peak_bytes).
std::expected<RunMeasure, std::string> measure_from_events(const std::string& jsonl);

struct Advice {
  double hours = 0;                    // the run's length with the 10 % time margin
  std::uint64_t needed_bytes = 0;      // peak with the 20 % memory margin
  std::vector<CostEstimate> fits;      // cheapest on demand first
  std::optional<std::string> laptop;   // the verdict on a laptop GPU of `laptop_vram_bytes`
};
Advice advise(const RunMeasure& m, const std::vector<GpuOffer>& catalog, std::optional<std::uint64_t> laptop_vram_bytes);

}  // namespace ferry::cloud

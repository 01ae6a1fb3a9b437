// The box's NVIDIA GPUs read through `nvidia-smi`'s query mode, which every NVIDIA driver installs.
// The agent is one static binary for any Linux box, and a static binary cannot dlopen the box's
// libnvidia-ml (it would bring a second, different libc into the process), so it asks the
// driver's own tool instead: two CSV queries, no shell, a time limit.
#pragma once

#include <chrono>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::agent {

// $FERRY_NVIDIA_SMI, else "nvidia-smi" (looked up on PATH, then in the driver's usual folders).
std::string default_nvidia_smi();

// gpu/status's `gpus` array: [{index, name?, util_percent?, mem_used_bytes?, mem_total_bytes?,
// power_w?, temp_c?, sm_clock_mhz?, mem_clock_mhz?, processes?: [{pid, used_bytes?}]}]; fields
// the driver reports as "[N/A]" or "[Not Supported]" are left out. The error says why no GPU
// could be read (no nvidia-smi, it failed, it timed out).
std::expected<nlohmann::json, std::string> query_gpus(const std::string& nvidia_smi,
                                                      std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Utilization per GPU in percent (the autostop watchdog's idle test); empty where none is readable.
std::vector<double> gpu_utilizations(const std::string& nvidia_smi);

// The pure halves, for tests: `--query-gpu` and `--query-compute-apps` CSV (noheader, nounits) to
// the array above.
nlohmann::json parse_gpu_csv(std::string_view gpus_csv, std::string_view apps_csv);

}  // namespace ferry::agent

// The box's CPU, memory, disk and network from /proc: counters parsed from one reading, rates
// from two, for gpu/status (the htop half of `ferry gpu`), and the bottleneck hint that reads
// GPU utilization against CPU saturation.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::agent {

struct CpuJiffies {
  std::uint64_t busy = 0;   // everything but idle and iowait
  std::uint64_t total = 0;
};
struct MemInfo {
  std::uint64_t total_bytes = 0;
  std::uint64_t available_bytes = 0;
};
struct ByteCounters {
  std::uint64_t in = 0;   // disk: read; net: received
  std::uint64_t out = 0;  // disk: written; net: sent
};

struct HostCounters {
  std::chrono::steady_clock::time_point at;
  CpuJiffies cpu;                 // all CPUs
  std::vector<CpuJiffies> cores;  // cpu0, cpu1, ...
  MemInfo memory;
  ByteCounters disk;
  ByteCounters net;
  std::string loadavg;            // "0.52 0.58 0.59"
};

// Each parser takes the file's text; nullopt when it is not that file's format.
std::optional<std::pair<CpuJiffies, std::vector<CpuJiffies>>> parse_proc_stat(std::string_view text);
std::optional<MemInfo> parse_meminfo(std::string_view text);
// Whole disks only (partitions, loop, ram, device-mapper and optical drives left out: they would
// count the same bytes twice or none at all), sectors of 512 bytes.
std::optional<ByteCounters> parse_diskstats(std::string_view text);
// Every interface but lo.
std::optional<ByteCounters> parse_net_dev(std::string_view text);

// Reads /proc (or a recorded copy laid out the same way: stat, meminfo, diskstats, net/dev, loadavg).
HostCounters read_host_counters(const std::filesystem::path& proc = "/proc");

// {cpu: {percent, perCore: [..]}, memory: {totalBytes, usedBytes, availableBytes}, disk:
// {readBytesPerSec, writeBytesPerSec}, net: {rxBytesPerSec, txBytesPerSec}, loadavg, intervalSeconds}
nlohmann::json host_stats_json(const HostCounters& before, const HostCounters& after);

// "input-bound: ..." with what to do, when some GPU is under 70 % while the CPUs are saturated
// (85 % or more on average); nullopt otherwise. `gpus` is gpu/status's list.
std::optional<std::string> bottleneck_hint(const nlohmann::json& gpus, double cpu_percent);

}  // namespace ferry::agent

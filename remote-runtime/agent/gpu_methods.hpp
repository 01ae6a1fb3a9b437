// gpu/status on the agent: the box's NVIDIA GPUs through nvidia-smi's query mode (gpu_query: the
// static agent cannot load NVML, and starts on machines without a driver) with the processes on each (the ferry run they
// belong to, when one of ours), and the box's CPU, memory, disk and network from /proc, with the
// bottleneck hint: `ferry gpu`, `ferry doctor` and the IDE's monitor.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "protocol/binding_table.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::agent {

struct GpuMethodOptions {
  std::string nvidia_smi = "nvidia-smi";           // run on each call (tests point it at a stand-in)
  std::filesystem::path state_dir;                 // runs, to name the run of a GPU process ("" = none)
  std::filesystem::path proc = "/proc";
};

// Answers gpu/status ({} -> {available, gpus?: [...], reason?, host, hint?}); nullopt for any other method.
std::optional<protocol::Response> handle_gpu_method(const protocol::Request& request, const GpuMethodOptions& options);
inline std::optional<protocol::Response> handle_gpu_method(const protocol::Request& request,
                                                           const std::string& nvidia_smi = "nvidia-smi") {
  return handle_gpu_method(request, GpuMethodOptions{nvidia_smi, {}, "/proc"});
}

// Binds gpu/status into the agent's table (raw params: it takes none).
void bind_gpu_methods(protocol::BindingTable& table, GpuMethodOptions options);

}  // namespace ferry::agent

// gpu/status on the agent: the box's NVIDIA GPUs through NVML (loaded with dlopen, so the agent
// still starts on machines without a driver), for `ferry doctor` and GPU monitoring.
#pragma once

#include <optional>
#include <string>

#include "protocol/jsonrpc.hpp"

namespace ferry::agent {

// Answers gpu/status ({} -> {available, gpus?: [...], reason?}); nullopt for any other method.
// `nvml_library` is the library dlopen'ed on each call (tests point it at a stand-in).
std::optional<protocol::Response> handle_gpu_method(const protocol::Request& request,
                                                    const std::string& nvml_library = "libnvidia-ml.so.1");

}  // namespace ferry::agent

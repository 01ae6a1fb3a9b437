// gpu/status: see gpu_methods.hpp.
#include "remote-runtime/agent/gpu_methods.hpp"

#include <nlohmann/json.hpp>

#include "remote-runtime/train/nvml.hpp"

namespace ferry::agent {

std::optional<protocol::Response> handle_gpu_method(const protocol::Request& request, const std::string& nvml_library) {
  if (request.method != "gpu/status") return std::nullopt;
  // Loaded per call: a driver installed after the agent started is seen, and NVML holds no
  // resources between doctor runs.
  auto nvml = train::Nvml::load(nvml_library);
  if (!nvml) {
    return protocol::make_result(
        request.id, nlohmann::json{{"available", false},
                                   {"reason", "NVML could not be loaded or initialised (" + nvml_library +
                                                  "): no NVIDIA driver on this machine, or it is not working"}});
  }
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& sample : nvml->sample_all()) gpus.push_back(train::to_json(sample));
  return protocol::make_result(request.id, nlohmann::json{{"available", true}, {"gpus", std::move(gpus)}});
}

}  // namespace ferry::agent

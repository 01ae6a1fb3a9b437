// GPU statistics through NVML, loaded at run time with dlopen so ferry-train starts (and these
// tests run) where no NVIDIA driver is installed: every failure is an empty optional.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ferry::train {

// One device at one moment. Fields NVML could not read are empty and left out of events.
struct GpuSample {
  int index = 0;
  std::string name;
  std::optional<double> utilization_percent;  // kernel time share over NVML's sample period
  std::optional<std::int64_t> memory_used_bytes;
  std::optional<std::int64_t> memory_total_bytes;
  std::optional<double> power_watts;
  std::optional<double> temperature_c;
  std::optional<int> sm_clock_mhz;   // NVML_CLOCK_SM
  std::optional<int> mem_clock_mhz;  // NVML_CLOCK_MEM
  struct Process {
    long long pid = 0;
    std::optional<std::int64_t> used_bytes;  // absent where the driver does not say (e.g. in a container)
  };
  std::vector<Process> processes;  // compute processes on this GPU
};

nlohmann::json to_json(const GpuSample& sample);

class Nvml {
 public:
  // Loads `library` (default libnvidia-ml.so.1) and initialises NVML; empty when either fails.
  static std::optional<Nvml> load(const std::string& library = "libnvidia-ml.so.1");

  Nvml(Nvml&&) noexcept;
  Nvml& operator=(Nvml&&) noexcept;
  ~Nvml();  // nvmlShutdown + dlclose

  std::optional<int> device_count() const;
  std::optional<GpuSample> sample(int index) const;
  std::vector<GpuSample> sample_all() const;

  struct Api;  // the resolved entry points (nvml.cpp)

 private:
  explicit Nvml(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

}  // namespace ferry::train

// NVML over dlopen. The few NVML types used are declared here by their documented ABI (opaque
// device handle, nvmlMemory_t, nvmlUtilization_t) so no CUDA headers are needed to build.
#include "remote-runtime/train/nvml.hpp"

#include <dlfcn.h>

#include <cstring>

#include <nlohmann/json.hpp>

namespace ferry::train {
namespace {

using NvmlReturn = int;  // nvmlReturn_t; 0 is NVML_SUCCESS
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU

struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
// nvmlMemory_v2_t: "used" excludes memory the driver reserves, as nvidia-smi reports it.
struct NvmlMemoryV2 {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
constexpr unsigned int kNvmlMemoryV2Version = static_cast<unsigned int>(sizeof(NvmlMemoryV2)) | (2u << 24);  // NVML_STRUCT_VERSION(Memory, 2)
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
constexpr int kClockSm = 1;   // NVML_CLOCK_SM
constexpr int kClockMem = 2;  // NVML_CLOCK_MEM
// nvmlProcessInfo_t as the _v2/_v3 entry points fill it.
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;  // NVML_VALUE_NOT_AVAILABLE (~0ull) when unknown
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

}  // namespace

struct Nvml::Api {
  void* handle = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*count)(unsigned int*) = nullptr;
  NvmlReturn (*by_index)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*name)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*memory_v2)(NvmlDevice, NvmlMemoryV2*) = nullptr;  // drivers from 510 on
  NvmlReturn (*power)(NvmlDevice, unsigned int*) = nullptr;  // milliwatts
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*clock)(NvmlDevice, int, unsigned int*) = nullptr;  // MHz
  NvmlReturn (*processes)(NvmlDevice, unsigned int*, NvmlProcessInfo*) = nullptr;

  ~Api() {
    if (shutdown != nullptr) shutdown();
    if (handle != nullptr) dlclose(handle);
  }
};

namespace {

template <typename Fn>
bool resolve(void* handle, Fn& out, const char* primary, const char* fallback = nullptr) {
  void* sym = dlsym(handle, primary);
  if (sym == nullptr && fallback != nullptr) sym = dlsym(handle, fallback);
  out = reinterpret_cast<Fn>(sym);
  return sym != nullptr;
}

}  // namespace

std::optional<Nvml> Nvml::load(const std::string& library) {
  auto api = std::make_unique<Api>();
  api->handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api->handle == nullptr) return std::nullopt;
  decltype(api->shutdown) shutdown = nullptr;
  const bool required = resolve(api->handle, api->init, "nvmlInit_v2", "nvmlInit") &&
                        resolve(api->handle, shutdown, "nvmlShutdown") &&
                        resolve(api->handle, api->count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount") &&
                        resolve(api->handle, api->by_index, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  if (!required) return std::nullopt;
  // Optional readings: an old or partial library still yields what it has.
  resolve(api->handle, api->name, "nvmlDeviceGetName");
  resolve(api->handle, api->utilization, "nvmlDeviceGetUtilizationRates");
  resolve(api->handle, api->memory, "nvmlDeviceGetMemoryInfo");
  resolve(api->handle, api->memory_v2, "nvmlDeviceGetMemoryInfo_v2");
  resolve(api->handle, api->power, "nvmlDeviceGetPowerUsage");
  resolve(api->handle, api->temperature, "nvmlDeviceGetTemperature");
  resolve(api->handle, api->clock, "nvmlDeviceGetClockInfo");
  // Only the versions whose struct is NvmlProcessInfo (the unversioned one has no instance ids).
  resolve(api->handle, api->processes, "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2");
  if (api->init() != kNvmlSuccess) return std::nullopt;
  api->shutdown = shutdown;  // only a successful init is paired with a shutdown
  return Nvml(std::move(api));
}

Nvml::Nvml(std::unique_ptr<Api> api) : api_(std::move(api)) {}
Nvml::Nvml(Nvml&&) noexcept = default;
Nvml& Nvml::operator=(Nvml&&) noexcept = default;
Nvml::~Nvml() = default;

std::optional<int> Nvml::device_count() const {
  unsigned int n = 0;
  if (!api_ || api_->count(&n) != kNvmlSuccess || n > 4096) return std::nullopt;
  return static_cast<int>(n);
}

std::optional<GpuSample> Nvml::sample(int index) const {
  if (!api_ || index < 0) return std::nullopt;
  NvmlDevice device = nullptr;
  if (api_->by_index(static_cast<unsigned int>(index), &device) != kNvmlSuccess) return std::nullopt;
  GpuSample s;
  s.index = index;
  if (api_->name != nullptr) {
    char name[96] = {};
    if (api_->name(device, name, sizeof name - 1) == kNvmlSuccess) s.name.assign(name, strnlen(name, sizeof name));
  }
  if (NvmlUtilization u{}; api_->utilization != nullptr && api_->utilization(device, &u) == kNvmlSuccess && u.gpu <= 100) {
    s.utilization_percent = u.gpu;
  }
  if (NvmlMemoryV2 m{kNvmlMemoryV2Version, 0, 0, 0, 0};
      api_->memory_v2 != nullptr && api_->memory_v2(device, &m) == kNvmlSuccess && m.used <= m.total) {
    s.memory_used_bytes = static_cast<std::int64_t>(m.used);
    s.memory_total_bytes = static_cast<std::int64_t>(m.total);
  } else if (NvmlMemory m1{}; api_->memory != nullptr && api_->memory(device, &m1) == kNvmlSuccess && m1.used <= m1.total) {
    s.memory_used_bytes = static_cast<std::int64_t>(m1.used);
    s.memory_total_bytes = static_cast<std::int64_t>(m1.total);
  }
  if (unsigned int mw = 0; api_->power != nullptr && api_->power(device, &mw) == kNvmlSuccess) s.power_watts = mw / 1000.0;
  if (unsigned int c = 0; api_->temperature != nullptr && api_->temperature(device, kTemperatureGpu, &c) == kNvmlSuccess) {
    s.temperature_c = c;
  }
  if (unsigned int mhz = 0; api_->clock != nullptr && api_->clock(device, kClockSm, &mhz) == kNvmlSuccess) s.sm_clock_mhz = mhz;
  if (unsigned int mhz = 0; api_->clock != nullptr && api_->clock(device, kClockMem, &mhz) == kNvmlSuccess) s.mem_clock_mhz = mhz;
  if (api_->processes != nullptr) {
    NvmlProcessInfo infos[64] = {};
    unsigned int n = 64;
    if (api_->processes(device, &n, infos) == kNvmlSuccess)
      for (unsigned int i = 0; i < n && i < 64; ++i) {
        GpuSample::Process p{infos[i].pid, std::nullopt};
        if (infos[i].used_gpu_memory != ~0ull) p.used_bytes = static_cast<std::int64_t>(infos[i].used_gpu_memory);
        s.processes.push_back(p);
      }
  }
  return s;
}

std::vector<GpuSample> Nvml::sample_all() const {
  std::vector<GpuSample> out;
  const int n = device_count().value_or(0);
  for (int i = 0; i < n; ++i) {
    if (auto s = sample(i)) out.push_back(std::move(*s));
  }
  return out;
}

nlohmann::json to_json(const GpuSample& s) {
  nlohmann::json j = {{"index", s.index}};
  if (!s.name.empty()) j["name"] = s.name;
  if (s.utilization_percent) j["util_percent"] = *s.utilization_percent;
  if (s.memory_used_bytes) j["mem_used_bytes"] = *s.memory_used_bytes;
  if (s.memory_total_bytes) j["mem_total_bytes"] = *s.memory_total_bytes;
  if (s.power_watts) j["power_w"] = *s.power_watts;
  if (s.temperature_c) j["temp_c"] = *s.temperature_c;
  if (s.sm_clock_mhz) j["sm_clock_mhz"] = *s.sm_clock_mhz;
  if (s.mem_clock_mhz) j["mem_clock_mhz"] = *s.mem_clock_mhz;
  if (!s.processes.empty()) {
    j["processes"] = nlohmann::json::array();
    for (const auto& p : s.processes) {
      nlohmann::json pj{{"pid", p.pid}};
      if (p.used_bytes) pj["used_bytes"] = *p.used_bytes;
      j["processes"].push_back(std::move(pj));
    }
  }
  return j;
}

}  // namespace ferry::train

// A stand-in libnvidia-ml for test_nvml: the entry points ferry-train resolves with dlsym,
// reporting two devices with fixed readings (device 1 fails its power and v2 memory queries).
#include <cstdlib>
#include <cstring>

extern "C" {

struct FakeDevice;
struct FakeMemory {
  unsigned long long total, free, used;
};
struct FakeUtilization {
  unsigned int gpu, memory;
};

static FakeDevice* handle_of(unsigned int i) { return reinterpret_cast<FakeDevice*>(static_cast<unsigned long>(i) + 1); }
static unsigned int index_of(FakeDevice* d) { return static_cast<unsigned int>(reinterpret_cast<unsigned long>(d) - 1); }
static int initialised = 0;

int nvmlInit_v2() {
  ++initialised;
  return 0;
}
int nvmlShutdown() {
  --initialised;
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned int* n) {
  if (initialised <= 0) return 1;  // NVML_ERROR_UNINITIALIZED
  *n = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, FakeDevice** d) {
  if (i >= 2) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *d = handle_of(i);
  return 0;
}
int nvmlDeviceGetName(FakeDevice* d, char* name, unsigned int len) {
  const char* n = index_of(d) == 0 ? "Fake H200" : "Fake L4";
  std::strncpy(name, n, len);
  return 0;
}
int nvmlDeviceGetUtilizationRates(FakeDevice* d, FakeUtilization* u) {
  u->gpu = index_of(d) == 0 ? 87 : 12;
  u->memory = 40;
  return 0;
}
int nvmlDeviceGetMemoryInfo(FakeDevice*, FakeMemory* m) {
  m->total = 141ull << 30;
  m->used = 20ull << 30;
  m->free = m->total - m->used;
  return 0;
}
// v2 leaves driver-reserved memory out of "used"; device 1 pretends an old driver (fallback to v1).
struct FakeMemoryV2 {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
int nvmlDeviceGetMemoryInfo_v2(FakeDevice* d, FakeMemoryV2* m) {
  if (index_of(d) == 1) return 3;
  if (m->version != (sizeof(FakeMemoryV2) | (2u << 24))) return 2;
  m->total = 141ull << 30;
  m->reserved = 1ull << 30;
  m->used = 19ull << 30;
  m->free = m->total - m->used - m->reserved;
  return 0;
}
int nvmlDeviceGetPowerUsage(FakeDevice* d, unsigned int* mw) {
  if (index_of(d) == 1) return 3;  // NVML_ERROR_NOT_SUPPORTED
  *mw = 412345;
  return 0;
}
int nvmlDeviceGetTemperature(FakeDevice*, int sensor, unsigned int* c) {
  if (sensor != 0) return 2;
  *c = 64;
  return 0;
}
int nvmlDeviceGetClockInfo(FakeDevice* d, int type, unsigned int* mhz) {
  if (type != 1 && type != 2) return 2;
  *mhz = type == 1 ? (index_of(d) == 0 ? 1980 : 2040) : 3201;
  return 0;
}
// Device 0 runs two processes: the pid in FAKE_NVML_PID (a test's own child) and pid 1, whose
// memory the driver does not report.
struct FakeProcessInfo {
  unsigned int pid;
  unsigned long long used;
  unsigned int gi, ci;
};
int nvmlDeviceGetComputeRunningProcesses_v3(FakeDevice* d, unsigned int* n, FakeProcessInfo* out) {
  if (index_of(d) != 0) {
    *n = 0;
    return 0;
  }
  if (*n < 2) {
    *n = 2;
    return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  }
  const char* env = std::getenv("FAKE_NVML_PID");
  out[0] = {static_cast<unsigned int>(env ? std::atoi(env) : 4242), 3ull << 30, 0, 0};
  out[1] = {1, ~0ull, 0, 0};
  *n = 2;
  return 0;
}
int fake_nvml_initialised() { return initialised; }
}

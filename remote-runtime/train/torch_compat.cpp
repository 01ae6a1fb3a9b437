// LibTorch version and build-shape shims: autocast (1.13 per-device setters vs 2.4+ device-typed API)
// and CUDA allocator statistics (only present when Torch was built with CUDA).
#include "remote-runtime/train/torch_compat.hpp"

#include <dlfcn.h>

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <ATen/Context.h>
#include <torch/version.h>

#if defined(FERRY_TORCH_CUDA)
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif

#define FERRY_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#include <cmath>
#include <limits>

#include <ATen/ops/dropout.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/softmax.h>
#if FERRY_TORCH_AT_LEAST(2, 0)
#include <ATen/ops/scaled_dot_product_attention.h>
#endif

namespace ferry::train {
namespace {

#if FERRY_TORCH_AT_LEAST(2, 4)
bool get_enabled(c10::DeviceType device) { return at::autocast::is_autocast_enabled(device); }
void set_enabled(c10::DeviceType device, bool on) { at::autocast::set_autocast_enabled(device, on); }
c10::ScalarType get_dtype(c10::DeviceType device) { return at::autocast::get_autocast_dtype(device); }
void set_dtype(c10::DeviceType device, c10::ScalarType dtype) { at::autocast::set_autocast_dtype(device, dtype); }
#else
bool get_enabled(c10::DeviceType device) {
  return device == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
}
void set_enabled(c10::DeviceType device, bool on) {
  if (device == c10::DeviceType::CPU) {
    at::autocast::set_cpu_enabled(on);
  } else {
    at::autocast::set_enabled(on);
  }
}
c10::ScalarType get_dtype(c10::DeviceType device) {
  return device == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype()
                                        : at::autocast::get_autocast_gpu_dtype();
}
void set_dtype(c10::DeviceType device, c10::ScalarType dtype) {
  if (device == c10::DeviceType::CPU) {
    at::autocast::set_autocast_cpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_gpu_dtype(dtype);
  }
}
#endif

}  // namespace

AutocastGuard::AutocastGuard(c10::DeviceType device, c10::ScalarType dtype, bool enabled) : device_(device) {
  if (!enabled) return;
  active_ = true;
  previous_enabled_ = get_enabled(device);
  previous_dtype_ = get_dtype(device);
  set_dtype(device, dtype);
  set_enabled(device, true);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  // The cast cache holds bf16/fp16 copies of the weights; they go stale after the optimizer step.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_enabled(device_, previous_enabled_);
  set_dtype(device_, previous_dtype_);
}

bool autocast_enabled(c10::DeviceType device) { return get_enabled(device); }

bool built_with_cuda() {
#if defined(FERRY_TORCH_CUDA)
  return true;
#else
  return false;
#endif
}

bool cuda_available() { return at::globalContext().hasCUDA() && cuda_device_count() > 0; }

int cuda_device_count() {
#if defined(FERRY_TORCH_CUDA)
  return static_cast<int>(c10::cuda::device_count());
#else
  return 0;
#endif
}

std::string torch_version_string() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

void cuda_reset_peak_memory([[maybe_unused]] int device) {
#if defined(FERRY_TORCH_CUDA)
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
#endif
}

std::int64_t cuda_peak_reserved_bytes([[maybe_unused]] int device) {
#if defined(FERRY_TORCH_CUDA)
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  // Index 0 is StatType::AGGREGATE in every version; the enum moved namespaces in 2.x.
  return stats.reserved_bytes[0].peak;
#else
  return 0;
#endif
}

void cuda_empty_cache() {
#if defined(FERRY_TORCH_CUDA)
  c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

std::optional<std::pair<std::int64_t, std::int64_t>> cuda_memory_info([[maybe_unused]] int device) {
#if defined(FERRY_TORCH_CUDA)
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return std::nullopt;
  cudaSetDevice(device);
  std::size_t free_bytes = 0, total_bytes = 0;
  const auto rc = cudaMemGetInfo(&free_bytes, &total_bytes);
  cudaSetDevice(previous);
  if (rc != cudaSuccess) return std::nullopt;
  return std::make_pair(static_cast<std::int64_t>(free_bytes), static_cast<std::int64_t>(total_bytes));
#else
  return std::nullopt;
#endif
}

void cuda_synchronize([[maybe_unused]] int device) {
#if defined(FERRY_TORCH_CUDA)
  c10::cuda::device_synchronize();
#endif
}

void set_compute_threads(int threads) {
  at::set_num_threads(threads);
  using SetThreads = void (*)(int);
  if (auto* fn = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) fn(threads);
}

bool is_out_of_memory_message(const std::string& what) {
  return what.find("out of memory") != std::string::npos || what.find("OutOfMemory") != std::string::npos;
}

bool has_fused_attention() { return FERRY_TORCH_AT_LEAST(2, 0); }

at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            [[maybe_unused]] const at::Tensor& causal_mask, double dropout_p, bool training) {
  const double p = training ? dropout_p : 0.0;
#if FERRY_TORCH_AT_LEAST(2, 0)
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, p, /*is_causal=*/true);
#else
  auto scores = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  scores = scores.masked_fill(causal_mask, -std::numeric_limits<float>::infinity());
  auto attn = at::softmax(scores, -1);
  if (p > 0.0) attn = at::dropout(attn, p, true);
  return at::matmul(attn, v);
#endif
}

}  // namespace ferry::train

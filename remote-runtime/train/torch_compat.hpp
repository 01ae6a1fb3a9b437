// The one place where ferry-train papers over LibTorch API differences (1.13 vs 2.x, CPU vs CUDA builds).
// Everything version- or CUDA-specific is behind these functions so the rest of the trainer is plain.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <ATen/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace ferry::train {

// Enables autocast for `device` with `dtype` for the guard's lifetime; restores the previous state and
// clears the autocast cast cache when the outermost guard ends.
class AutocastGuard {
 public:
  AutocastGuard(c10::DeviceType device, c10::ScalarType dtype, bool enabled);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_;
  bool active_ = false;
  bool previous_enabled_ = false;
  c10::ScalarType previous_dtype_ = c10::ScalarType::Float;
};

bool autocast_enabled(c10::DeviceType device);

// Whether this build of LibTorch can drive CUDA at all (compiled in and a device present).
bool cuda_available();
int cuda_device_count();
std::string torch_version_string();
bool built_with_cuda();

// CUDA caching-allocator bookkeeping for the auto batch-size probe; no-ops on CPU builds.
void cuda_reset_peak_memory(int device);
std::int64_t cuda_peak_reserved_bytes(int device);
void cuda_empty_cache();
// Free and total device memory as the driver sees them; nullopt when unknown.
std::optional<std::pair<std::int64_t, std::int64_t>> cuda_memory_info(int device);
void cuda_synchronize(int device);

// Intra-op threads for ATen and, when LibTorch sits on a pthreads OpenBLAS (Debian's), for OpenBLAS's
// own pool too, which at::set_num_threads does not reach.
void set_compute_threads(int threads);

// True when `what` (an exception message) says the allocator ran out of memory.
bool is_out_of_memory_message(const std::string& what);

// Causal self-attention over [B, H, T, hd] tensors. LibTorch 2.x has a fused kernel
// (scaled_dot_product_attention: flash / memory-efficient on CUDA); 1.13 has none, so there it is
// matmul + masked softmax. `causal_mask` ([T, T], true above the diagonal) is used only on that path.
at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& causal_mask, double dropout_p, bool training);
bool has_fused_attention();

}  // namespace ferry::train

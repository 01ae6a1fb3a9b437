// Dynamic loss scaling for fp16: scale the loss, unscale gradients while looking for inf/NaN, skip the
// step on overflow and back off, grow again after a run of clean steps.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/Tensor.h>

namespace ferry::train {

class LossScaler {
 public:
  // kAten uses ATen's fused amp kernels (falling back to kPlain when the device has none);
  // kPlain uses ordinary tensor math and exists on every device and version.
  enum class Path { kAten, kPlain };

  struct Options {
    double init_scale = 65536.0;
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    std::int64_t growth_interval = 2000;
    Path path = Path::kAten;
  };

  LossScaler(Options options, const at::Device& device);

  at::Tensor scale(const at::Tensor& loss) const;
  // Divides every gradient by the scale; true when any was inf/NaN (then the step must be skipped).
  bool unscale(const std::vector<at::Tensor>& grads);
  // Applies the outcome of the last unscale to the scale and the growth tracker.
  void update();

  double current_scale() const;
  std::int64_t growth_tracker() const;
  bool used_aten() const { return used_aten_; }
  void restore(double scale, std::int64_t tracker);

 private:
  bool unscale_plain(const std::vector<at::Tensor>& grads);
  void update_plain();

  Options options_;
  at::Tensor scale_;           // float32 [1] on the training device
  at::Tensor growth_tracker_;  // int32 [1]
  at::Tensor found_inf_;       // float32 [1]
  bool aten_unscale_ok_ = true;
  bool aten_update_ok_ = true;
  bool used_aten_ = false;
};

}  // namespace ferry::train

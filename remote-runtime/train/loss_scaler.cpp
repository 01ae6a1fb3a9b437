// Loss scaler. ATen's _amp_* ops are CUDA-only in LibTorch 1.13 (CPU kernels arrived in 2.x), so the
// first call tries them and remembers a NotImplemented dispatch error as "use plain math".
#include "remote-runtime/train/loss_scaler.hpp"

#include <ATen/ATen.h>

namespace ferry::train {

LossScaler::LossScaler(Options options, const at::Device& device) : options_(options) {
  auto f = at::TensorOptions().dtype(at::kFloat).device(device);
  scale_ = at::full({1}, options_.init_scale, f);
  growth_tracker_ = at::zeros({1}, f.dtype(at::kInt));
  found_inf_ = at::zeros({1}, f);
  if (options_.path == Path::kPlain) aten_unscale_ok_ = aten_update_ok_ = false;
}

at::Tensor LossScaler::scale(const at::Tensor& loss) const { return loss * scale_.to(loss.scalar_type()); }

bool LossScaler::unscale(const std::vector<at::Tensor>& grads) {
  found_inf_.zero_();
  used_aten_ = false;
  if (aten_unscale_ok_) {
    try {
      std::vector<at::Tensor> present;  // parameters that took no part in the loss have no grad
      present.reserve(grads.size());
      for (const auto& g : grads) {
        if (g.defined()) present.push_back(g);
      }
      auto inv = scale_.to(at::kDouble).reciprocal().to(at::kFloat);
      at::_amp_foreach_non_finite_check_and_unscale_(present, found_inf_, inv);
      used_aten_ = true;
      return found_inf_.item<float>() != 0.0f;
    } catch (const c10::Error&) {
      aten_unscale_ok_ = false;  // no kernel for this device in this LibTorch
    }
  }
  return unscale_plain(grads);
}

bool LossScaler::unscale_plain(const std::vector<at::Tensor>& grads) {
  const auto inv = 1.0 / scale_.item<double>();
  bool found = false;
  for (const auto& g : grads) {
    if (!g.defined()) continue;
    if (!found && !at::isfinite(g).all().item<bool>()) found = true;
    g.mul_(static_cast<float>(inv));
  }
  found_inf_.fill_(found ? 1.0 : 0.0);
  return found;
}

void LossScaler::update() {
  if (aten_update_ok_) {
    try {
      at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, options_.growth_factor, options_.backoff_factor,
                             options_.growth_interval);
      return;
    } catch (const c10::Error&) {
      aten_update_ok_ = false;
    }
  }
  update_plain();
}

void LossScaler::update_plain() {
  // Same rule as _amp_update_scale_: back off on overflow, grow after growth_interval clean steps.
  if (found_inf_.item<float>() != 0.0f) {
    scale_.mul_(options_.backoff_factor);
    growth_tracker_.zero_();
    return;
  }
  const auto tracker = growth_tracker_.item<int>() + 1;
  if (tracker == options_.growth_interval) {
    scale_.mul_(options_.growth_factor);
    growth_tracker_.zero_();
  } else {
    growth_tracker_.fill_(tracker);
  }
}

double LossScaler::current_scale() const { return scale_.item<double>(); }
std::int64_t LossScaler::growth_tracker() const { return growth_tracker_.item<int>(); }

void LossScaler::restore(double scale, std::int64_t tracker) {
  scale_.fill_(scale);
  growth_tracker_.fill_(static_cast<int>(tracker));
}

}  // namespace ferry::train

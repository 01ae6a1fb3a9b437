// The three model families ferry-train builds from a config: an MLP, a small ResNet-style CNN and a
// decoder-only transformer language model. Included only by torch translation units.
#pragma once

#include <memory>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "remote-runtime/train/train_config.hpp"

namespace ferry::train {

class Model : public torch::nn::Module {
 public:
  // classification/regression: [B, features] or [B, C, H, W] -> [B, out];
  // language model: int64 tokens [B, T] -> logits [B, T, vocab].
  virtual torch::Tensor forward(const torch::Tensor& input) = 0;
};

std::shared_ptr<Model> make_model(const ModelConfig& config);

// The loss for `task`; for the language model, logits [B,T,V] against int64 targets [B,T].
torch::Tensor compute_loss(Task task, const torch::Tensor& output, const torch::Tensor& target);

std::int64_t parameter_count(const torch::nn::Module& model);

}  // namespace ferry::train

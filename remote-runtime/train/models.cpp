// Model definitions. Attention goes through torch_compat's causal_attention: the fused kernel on
// LibTorch 2.x, matmul + masked softmax on 1.13.
#include "remote-runtime/train/models.hpp"
#include "remote-runtime/train/torch_compat.hpp"

#include <cmath>
#include <stdexcept>

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

namespace ferry::train {
namespace {

class Mlp : public Model {
 public:
  explicit Mlp(const ModelConfig& config) {
    int in = config.input_dim;
    for (std::size_t i = 0; i < config.hidden.size(); ++i) {
      layers_.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(in, config.hidden[i])));
      in = config.hidden[i];
    }
    layers_.push_back(register_module("out", torch::nn::Linear(in, config.output_dim)));
  }
  torch::Tensor forward(const torch::Tensor& input) override {
    auto x = input.dim() > 2 ? input.flatten(1) : input;
    for (std::size_t i = 0; i + 1 < layers_.size(); ++i) x = layers_[i]->forward(x).relu_();
    return layers_.back()->forward(x);
  }

 private:
  std::vector<torch::nn::Linear> layers_;
};

class ResidualBlock : public torch::nn::Module {
 public:
  explicit ResidualBlock(int width)
      : conv1_(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(width, width, 3).padding(1).bias(false)))),
        bn1_(register_module("bn1", torch::nn::BatchNorm2d(width))),
        conv2_(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(width, width, 3).padding(1).bias(false)))),
        bn2_(register_module("bn2", torch::nn::BatchNorm2d(width))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = bn1_->forward(conv1_->forward(x)).relu_();
    y = bn2_->forward(conv2_->forward(y));
    return (y + x).relu_();
  }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Conv2d conv2_;
  torch::nn::BatchNorm2d bn2_;
};

class Cnn : public Model {
 public:
  explicit Cnn(const ModelConfig& config)
      : stem_(register_module("stem", torch::nn::Conv2d(torch::nn::Conv2dOptions(config.in_channels, config.width, 3).padding(1).bias(false)))),
        stem_bn_(register_module("stem_bn", torch::nn::BatchNorm2d(config.width))),
        head_(register_module("head", torch::nn::Linear(config.width, config.output_dim))),
        in_channels_(config.in_channels),
        image_size_(config.image_size) {
    for (int i = 0; i < config.blocks; ++i) {
      blocks_.push_back(register_module("block" + std::to_string(i), std::make_shared<ResidualBlock>(config.width)));
    }
  }
  torch::Tensor forward(const torch::Tensor& input) override {
    auto x = input.dim() == 2 ? input.view({input.size(0), in_channels_, image_size_, image_size_}) : input;
    x = stem_bn_->forward(stem_->forward(x)).relu_();
    // Halve the resolution once so the blocks are cheap on CPU.
    x = torch::max_pool2d(x, 2);
    for (auto& block : blocks_) x = block->forward(x);
    x = x.mean({2, 3});
    return head_->forward(x);
  }

 private:
  torch::nn::Conv2d stem_;
  torch::nn::BatchNorm2d stem_bn_;
  std::vector<std::shared_ptr<ResidualBlock>> blocks_;
  torch::nn::Linear head_;
  int in_channels_;
  int image_size_;
};

class DecoderBlock : public torch::nn::Module {
 public:
  DecoderBlock(int d_model, int heads, double dropout)
      : ln1_(register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})))),
        qkv_(register_module("qkv", torch::nn::Linear(d_model, 3 * d_model))),
        proj_(register_module("proj", torch::nn::Linear(d_model, d_model))),
        ln2_(register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})))),
        fc1_(register_module("fc1", torch::nn::Linear(d_model, 4 * d_model))),
        fc2_(register_module("fc2", torch::nn::Linear(4 * d_model, d_model))),
        drop_(register_module("drop", torch::nn::Dropout(dropout))),
        heads_(heads),
        head_dim_(d_model / heads),
        dropout_(dropout) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& causal_mask) {
    const auto b = x.size(0), t = x.size(1), d = x.size(2);
    auto qkv = qkv_->forward(ln1_->forward(x)).view({b, t, 3, heads_, head_dim_}).permute({2, 0, 3, 1, 4});
    auto q = qkv[0], k = qkv[1], v = qkv[2];  // [B, H, T, hd]
    auto y = causal_attention(q, k, v, causal_mask, dropout_, is_training()).transpose(1, 2).reshape({b, t, d});
    auto h = x + drop_->forward(proj_->forward(y));
    auto m = fc2_->forward(torch::gelu(fc1_->forward(ln2_->forward(h))));
    return h + drop_->forward(m);
  }

 private:
  torch::nn::LayerNorm ln1_;
  torch::nn::Linear qkv_, proj_;
  torch::nn::LayerNorm ln2_;
  torch::nn::Linear fc1_, fc2_;
  torch::nn::Dropout drop_;
  std::int64_t heads_, head_dim_;
  double dropout_;
};

class Transformer : public Model {
 public:
  explicit Transformer(const ModelConfig& config)
      : tok_(register_module("tok_emb", torch::nn::Embedding(config.vocab_size, config.d_model))),
        pos_(register_module("pos_emb", torch::nn::Embedding(config.context, config.d_model))),
        ln_f_(register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.d_model})))),
        head_(register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(config.d_model, config.vocab_size).bias(false)))) {
    if (config.heads <= 0 || config.d_model % config.heads != 0) {
      throw std::invalid_argument("transformer: d_model must be a multiple of heads");
    }
    for (int i = 0; i < config.layers; ++i) {
      blocks_.push_back(register_module("block" + std::to_string(i),
                                        std::make_shared<DecoderBlock>(config.d_model, config.heads, config.dropout)));
    }
  }
  torch::Tensor forward(const torch::Tensor& tokens) override {
    const auto t = tokens.size(1);
    if (!mask_.defined() || mask_.size(0) != t || mask_.device() != tokens.device()) {
      // Not a registered buffer: it is derived, so it stays out of checkpoints and the parameter hash.
      mask_ = torch::ones({t, t}, torch::TensorOptions().dtype(torch::kBool).device(tokens.device())).triu(1);
    }
    auto positions = torch::arange(t, torch::TensorOptions().dtype(torch::kLong).device(tokens.device()));
    auto x = tok_->forward(tokens) + pos_->forward(positions).unsqueeze(0);
    for (auto& block : blocks_) x = block->forward(x, mask_);
    return head_->forward(ln_f_->forward(x));
  }

 private:
  torch::nn::Embedding tok_, pos_;
  std::vector<std::shared_ptr<DecoderBlock>> blocks_;
  torch::nn::LayerNorm ln_f_;
  torch::nn::Linear head_;
  torch::Tensor mask_;
};

}  // namespace

std::shared_ptr<Model> make_model(const ModelConfig& config) {
  switch (config.kind) {
    case ModelKind::mlp: return std::make_shared<Mlp>(config);
    case ModelKind::cnn: return std::make_shared<Cnn>(config);
    case ModelKind::transformer: return std::make_shared<Transformer>(config);
  }
  throw std::invalid_argument("unknown model kind");
}

torch::Tensor compute_loss(Task task, const torch::Tensor& output, const torch::Tensor& target) {
  switch (task) {
    case Task::classification: return torch::nn::functional::cross_entropy(output, target);
    case Task::regression: return torch::nn::functional::mse_loss(output, target);
    case Task::language_model:
      return torch::nn::functional::cross_entropy(output.reshape({-1, output.size(-1)}), target.reshape({-1}));
  }
  throw std::invalid_argument("unknown task");
}

std::int64_t parameter_count(const torch::nn::Module& model) {
  std::int64_t n = 0;
  for (const auto& p : model.parameters()) n += p.numel();
  return n;
}

}  // namespace ferry::train

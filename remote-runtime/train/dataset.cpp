// Dataset construction. Synthetic data comes from its own seeded generator so the data never depends
// on the run seed or on how many RNG draws the model initialisation made.
#include "remote-runtime/train/dataset.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>


namespace ferry::train {
namespace {

std::int64_t feature_count(const ModelConfig& model) {
  switch (model.kind) {
    case ModelKind::mlp: return model.input_dim;
    case ModelKind::cnn: return static_cast<std::int64_t>(model.in_channels) * model.image_size * model.image_size;
    case ModelKind::transformer: return model.context + 1;
  }
  return 0;
}

Dataset synthetic(const TrainConfig& config) {
  auto gen = at::detail::createCPUGenerator(config.data.seed);
  const auto n = config.data.samples;
  Dataset data;
  data.task = config.data.task;
  const auto features = feature_count(config.model);
  switch (config.data.task) {
    case Task::classification: {
      // Noisy copies of one random template per class: learnable by every model kind.
      const auto classes = config.model.output_dim;
      auto templates = torch::randn({classes, features}, gen);
      data.targets = torch::randint(0, classes, {n}, gen, torch::kLong);
      data.inputs = torch::randn({n, features}, gen).add_(templates.index_select(0, data.targets), 0.5);
      break;
    }
    case Task::regression: {
      auto teacher = torch::randn({features, config.model.output_dim}, gen).div_(std::sqrt(static_cast<double>(features)));
      data.inputs = torch::randn({n, features}, gen);
      data.targets = torch::matmul(data.inputs, teacher).add_(torch::randn({n, config.model.output_dim}, gen), 0.1);
      break;
    }
    case Task::language_model: {
      // Each row follows x[t+1] = (a*x[t] + c) mod V with occasional random tokens: predictable but not trivial.
      const auto vocab = config.model.vocab_size;
      const auto len = config.model.context + 1;
      auto rows = torch::empty({n, len}, torch::kLong);
      auto current = torch::randint(0, vocab, {n}, gen, torch::kLong);
      const std::int64_t a = 5, c = 3;
      for (std::int64_t t = 0; t < len; ++t) {
        rows.select(1, t).copy_(current);
        auto next = (current * a + c).remainder(vocab);
        auto noise = torch::randint(0, vocab, {n}, gen, torch::kLong);
        auto flip = torch::rand({n}, gen).lt(0.1);
        current = torch::where(flip, noise, next);
      }
      data.inputs = rows;
      break;
    }
  }
  if (config.model.kind == ModelKind::cnn && data.inputs.dim() == 2) {
    data.inputs = data.inputs.view({n, config.model.in_channels, config.model.image_size, config.model.image_size});
  }
  return data;
}

Dataset head(const Dataset& d, std::int64_t count) {
  Dataset out = d;
  out.inputs = d.inputs.narrow(0, 0, count);
  if (d.targets.defined()) out.targets = d.targets.narrow(0, 0, count);
  return out;
}

Dataset tail(const Dataset& d, std::int64_t from) {
  Dataset out = d;
  out.inputs = d.inputs.narrow(0, from, d.size() - from);
  if (d.targets.defined()) out.targets = d.targets.narrow(0, from, d.size() - from);
  return out;
}

std::expected<DataSplit, std::string> load_mnist_split(const TrainConfig&) {
  return std::unexpected("data: mnist source not wired yet");
}

std::expected<Dataset, std::string> load_tensor_dataset(const TrainConfig&) {
  return std::unexpected("data: tensor source not wired yet");
}

}  // namespace

std::expected<DataSplit, std::string> load_data(const TrainConfig& config) {
  if (config.data.source == DataSource::mnist) return load_mnist_split(config);
  Dataset all;
  if (config.data.source == DataSource::synthetic) {
    all = synthetic(config);
  } else {
    auto loaded = load_tensor_dataset(config);
    if (!loaded) return std::unexpected(loaded.error());
    all = std::move(*loaded);
  }
  const auto n = all.size();
  auto eval_n = static_cast<std::int64_t>(static_cast<double>(n) * config.data.eval_fraction);
  if (eval_n >= n) return std::unexpected("data: eval_fraction leaves no training samples");
  DataSplit split;
  split.train = head(all, n - eval_n);
  split.eval = tail(all, n - eval_n);
  return split;
}

Batch gather_batch(const Dataset& data, const torch::Tensor& rows, bool pin_memory) {
  Batch batch;
  auto inputs = data.inputs.index_select(0, rows);
  if (data.task == Task::language_model) {
    const auto len = inputs.size(1);
    batch.input = inputs.narrow(1, 0, len - 1).contiguous();
    batch.target = inputs.narrow(1, 1, len - 1).contiguous();
  } else {
    batch.input = inputs;
    batch.target = data.targets.index_select(0, rows);
  }
  // Raw bytes (MNIST pixels, uint8 .ftensor files) become floats per batch, not for the whole set.
  if (data.task != Task::language_model && batch.input.scalar_type() != torch::kFloat) {
    batch.input = batch.input.to(torch::kFloat).mul_(data.input_scale);
  }
  if (data.task == Task::language_model && batch.input.scalar_type() != torch::kLong) {
    batch.input = batch.input.to(torch::kLong);
    batch.target = batch.target.to(torch::kLong);
  }
  if (data.task == Task::classification && batch.target.scalar_type() != torch::kLong) {
    batch.target = batch.target.to(torch::kLong);
  }
  if (data.task == Task::regression && batch.target.scalar_type() != torch::kFloat) {
    batch.target = batch.target.to(torch::kFloat);
  }
  if (pin_memory) {
    batch.input = batch.input.pin_memory();
    batch.target = batch.target.pin_memory();
  }
  return batch;
}

}  // namespace ferry::train

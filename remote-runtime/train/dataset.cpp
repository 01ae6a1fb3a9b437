// Dataset construction. Synthetic data comes from its own seeded generator so the data never depends
// on the run seed or on how many RNG draws the model initialisation made.
#include "remote-runtime/train/dataset.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "remote-runtime/train/mnist_idx.hpp"
#include "remote-runtime/train/tensor_file.hpp"


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

Expected<void, std::string> check_row_shape(const TrainConfig& config, const torch::Tensor& inputs) {
  const auto per_row = inputs.numel() / std::max<std::int64_t>(1, inputs.size(0));
  const auto want = feature_count(config.model);
  if (config.model.kind == ModelKind::transformer) {
    if (inputs.dim() != 2 || inputs.size(1) != want) {
      return Unexpected("data: language-model rows must hold model.context + 1 = " + std::to_string(want) + " tokens");
    }
  } else if (per_row != want) {
    return Unexpected("data: each sample has " + std::to_string(per_row) + " values but the model expects " +
                           std::to_string(want));
  }
  return {};
}

// MNIST IDX files stay memory-mapped; pixels become floats in [0, 1] per batch.
Expected<Dataset, std::string> mnist_part(const TrainConfig& config, bool train) {
  auto split = ferry::train::load_mnist_split(config.data.path, train);
  if (!split) return Unexpected("data: " + split.error());
  auto owner = std::make_shared<MnistSplit>(std::move(*split));
  Dataset d;
  d.task = config.data.task;
  d.input_scale = 1.0 / 255.0;
  auto* pixels = const_cast<std::uint8_t*>(owner->image(0));
  auto* labels = const_cast<std::byte*>(owner->labels.data().data());
  d.inputs = torch::from_blob(pixels, {owner->count, 1, owner->rows, owner->cols}, torch::kByte);
  if (config.model.kind == ModelKind::mlp) d.inputs = d.inputs.view({owner->count, owner->rows * owner->cols});
  d.targets = torch::from_blob(labels, {owner->count}, torch::kByte);
  d.backing = owner;
  if (auto ok = check_row_shape(config, d.inputs); !ok) return Unexpected(ok.error());
  return d;
}

Expected<DataSplit, std::string> mnist_data(const TrainConfig& config) {
  if (config.data.task != Task::classification) return Unexpected("data: mnist is a classification dataset");
  auto train = mnist_part(config, true);
  if (!train) return Unexpected(train.error());
  DataSplit split;
  split.train = std::move(*train);
  if (auto test = mnist_part(config, false)) {
    split.eval = std::move(*test);
  } else {
    const auto n = split.train.size();
    const auto eval_n = static_cast<std::int64_t>(static_cast<double>(n) * config.data.eval_fraction);
    split.eval = tail(split.train, n - eval_n);
    split.train = head(split.train, n - eval_n);
  }
  return split;
}

std::optional<torch::ScalarType> torch_dtype(DType t) {
  switch (t) {
    case DType::f32: return torch::kFloat;
    case DType::f16: return torch::kHalf;
    case DType::bf16: return torch::kBFloat16;
    case DType::i64: return torch::kLong;
    case DType::i32: return torch::kInt;
    case DType::u8: return torch::kByte;
  }
  return std::nullopt;
}

Expected<torch::Tensor, std::string> map_tensor(const std::filesystem::path& path, std::shared_ptr<TensorFile>& keep) {
  auto file = TensorFile::open(path);
  if (!file) return Unexpected("data: " + file.error());
  keep = std::make_shared<TensorFile>(std::move(*file));
  auto dtype = torch_dtype(keep->dtype());
  if (!dtype) return Unexpected("data: unsupported dtype in " + path.string());
  // Read-only mapping: the loader only ever gathers from it (index_select never writes its source).
  return torch::from_blob(const_cast<void*>(keep->data()), keep->shape(), *dtype);
}

// .ftensor inputs (and targets unless language modelling) through mmap: pages load as batches touch them.
Expected<Dataset, std::string> tensor_data(const TrainConfig& config) {
  Dataset d;
  d.task = config.data.task;
  std::shared_ptr<TensorFile> inputs_file, labels_file;
  auto inputs = map_tensor(config.data.path, inputs_file);
  if (!inputs) return Unexpected(inputs.error());
  d.inputs = *inputs;
  if (config.data.task != Task::language_model) {
    if (config.data.labels_path.empty()) return Unexpected("data: labels_path is required for this task");
    auto labels = map_tensor(config.data.labels_path, labels_file);
    if (!labels) return Unexpected(labels.error());
    if (labels->size(0) != d.inputs.size(0)) return Unexpected("data: inputs and labels have different row counts");
    d.targets = config.data.task == Task::classification ? labels->reshape({labels->size(0)}) : *labels;
  }
  if (auto ok = check_row_shape(config, d.inputs); !ok) return Unexpected(ok.error());
  if (config.model.kind == ModelKind::cnn && d.inputs.dim() == 2) {
    d.inputs = d.inputs.view({d.inputs.size(0), config.model.in_channels, config.model.image_size, config.model.image_size});
  }
  d.backing = std::make_shared<std::pair<std::shared_ptr<TensorFile>, std::shared_ptr<TensorFile>>>(inputs_file, labels_file);
  return d;
}

}  // namespace

Expected<DataSplit, std::string> load_data(const TrainConfig& config) {
  if (config.data.source == DataSource::mnist) return mnist_data(config);
  Dataset all;
  if (config.data.source == DataSource::synthetic) {
    all = synthetic(config);
  } else {
    auto loaded = tensor_data(config);
    if (!loaded) return Unexpected(loaded.error());
    all = std::move(*loaded);
  }
  const auto n = all.size();
  auto eval_n = static_cast<std::int64_t>(static_cast<double>(n) * config.data.eval_fraction);
  if (eval_n >= n) return Unexpected("data: eval_fraction leaves no training samples");
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

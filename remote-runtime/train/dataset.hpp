// In-memory datasets for ferry-train: synthetic (seeded), MNIST IDX files and .ftensor files (mmap),
// split into a training and a held-out evaluation part. Included only by torch translation units.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <torch/types.h>

#include "remote-runtime/train/expected.hpp"
#include "remote-runtime/train/train_config.hpp"

namespace ferry::train {

struct Dataset {
  // Sample-major CPU tensors. For the language model `inputs` holds int64 token rows of
  // context + 1 and `targets` is undefined: a batch's input and target are shifted views of a row.
  torch::Tensor inputs;
  torch::Tensor targets;
  Task task = Task::classification;
  double input_scale = 1.0;  // applied when non-float inputs are converted per batch
  // Keeps an mmap (or other backing store) alive for as long as the tensors point into it.
  std::shared_ptr<void> backing;
  std::int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};

struct DataSplit {
  Dataset train;
  Dataset eval;
};

Expected<DataSplit, std::string> load_data(const TrainConfig& config);

// The input and target tensors of a batch built from rows `rows` of `data` (rows on CPU, int64).
struct Batch {
  torch::Tensor input;
  torch::Tensor target;
  std::int64_t index = 0;  // batch number within the epoch
};
Batch gather_batch(const Dataset& data, const torch::Tensor& rows, bool pin_memory);

}  // namespace ferry::train

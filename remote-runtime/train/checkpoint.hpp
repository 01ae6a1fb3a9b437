// ferry's checkpoint container and the training state that goes in it. The container is a JSON header
// plus raw tensor bytes, readable by any LibTorch version; optimizer state is stored per parameter name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "remote-runtime/train/expected.hpp"

namespace torch::optim {
class Optimizer;
}
namespace torch::nn {
class Module;
}

namespace ferry::train {

inline constexpr int kCheckpointFormatVersion = 1;

struct CheckpointData {
  nlohmann::json meta = nlohmann::json::object();
  std::vector<std::pair<std::string, torch::Tensor>> tensors;  // CPU copies are written
  const torch::Tensor* find(const std::string& name) const;
};

// temp file in the same dir, fsync, rename, fsync dir: a crash leaves the old or the new file, never a torn one.
Expected<void, std::string> write_checkpoint(const std::filesystem::path& file, const CheckpointData& data);
Expected<CheckpointData, std::string> read_checkpoint(const std::filesystem::path& file);

// ckpt-<step>.ferry files of `dir`, oldest first.
std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& dir);
std::filesystem::path checkpoint_path(const std::filesystem::path& dir, std::int64_t step);
void prune_checkpoints(const std::filesystem::path& dir, int keep_last);

// Model parameters and buffers under "model/<name>".
void add_model_state(CheckpointData& data, const torch::nn::Module& model);
Expected<void, std::string> load_model_state(const CheckpointData& data, torch::nn::Module& model);

// Optimizer state keyed by parameter name under "optim/<name>/<field>", per-parameter step counts
// and the group options (lr included: Optimizer::load in 1.13 does not restore it) in meta["optimizer"].
void add_optimizer_state(CheckpointData& data, torch::optim::Optimizer& optimizer, const torch::nn::Module& model);
Expected<void, std::string> load_optimizer_state(const CheckpointData& data, torch::optim::Optimizer& optimizer,
                                                      const torch::nn::Module& model);

// Torch's CPU generator and, when `cuda_device` >= 0, that CUDA device's generator.
void add_rng_state(CheckpointData& data, int cuda_device);
Expected<void, std::string> load_rng_state(const CheckpointData& data, int cuda_device);

// FNV-1a 64 over each parameter's bytes in name order, as 16 hex digits.
std::string parameter_hash(const torch::nn::Module& model);

}  // namespace ferry::train

// Multi-process training through torch.distributed c10d: Gloo on CPU, NCCL on CUDA where the build has
// it. Ranks come from the torchrun environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

#include "remote-runtime/train/expected.hpp"

namespace ferry::train {

struct DistributedEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};

// Reads the launcher's variables (torchrun's, or Slurm's: launcher_env.hpp); none means a single
// process. Bad values are errors.
Expected<DistributedEnv, std::string> distributed_env_from_environment();

bool distributed_available();
// The c10d backends compiled in, for --version: "gloo", "nccl", "gloo+nccl" or "none".
std::string distributed_backends();

class ProcessGroupHandle {
 public:
  static Expected<std::unique_ptr<ProcessGroupHandle>, std::string> connect(const DistributedEnv& env, bool cuda);
  virtual ~ProcessGroupHandle() = default;
  // Sums `grads` across ranks and divides by the world size, as one flattened bucket.
  virtual void average(const std::vector<at::Tensor>& grads) = 0;
  // Elementwise max across ranks (used to agree on stopping after a signal).
  virtual void max_inplace(at::Tensor& t) = 0;
  virtual void barrier() = 0;
  virtual std::string backend() const = 0;
};

}  // namespace ferry::train

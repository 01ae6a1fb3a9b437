// Who this process is in a multi-process job, from the launcher that started it: torchrun (and
// `ferry train --hosts`) set RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT; Slurm's srun sets SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and the job's node
// list, whose first host is the rendezvous. torchrun's variables win where both are set.
// Torch-free, so it is tested without LibTorch.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "remote-runtime/train/expected.hpp"

namespace ferry::train {

struct LauncherEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string launcher = "none";  // "torchrun" (or ferry), "slurm", "none"
};

using GetEnv = std::function<std::optional<std::string>(const char* name)>;

// Bad values are errors naming the variable.
Expected<LauncherEnv, std::string> launcher_env(const GetEnv& get);
Expected<LauncherEnv, std::string> launcher_env_from_process();

// The first host of a Slurm node list: "gpu[03-05,09],cpu1" -> "gpu03", "a,b" -> "a".
std::string first_slurm_host(const std::string& nodelist);

}  // namespace ferry::train

// Allocations on a cluster's login node (protocol/slurm_alloc.hpp): slurm/allocate submits a job
// whose batch step only holds the nodes (`ferry-agent --slurm-hold`), slurm/jobs and slurm/cancel
// list and end this user's jobs of a name; and `ferry-agent --job-link`, the start of an agent
// inside a running job: it reads where from its first stdin line and becomes srun, which carries
// the rest of its stdin and stdout to an agent on the compute node (no sshd there).
#pragma once

#include <filesystem>

#include "protocol/binding_table.hpp"

namespace ferry::agent::run {

// `state_dir`: where the hold script is written before sbatch copies it.
void bind_slurm_alloc_methods(protocol::BindingTable& table, const std::filesystem::path& state_dir);

// ferry-agent --slurm-hold SCRIPT: the allocation's batch step; waits for SIGTERM (scancel, the
// time limit) and exits 0.
int hold_allocation();

// ferry-agent --job-link: one JSON line on stdin {jobId, node?, root, env?: ["NAME=value"]}, read a
// byte at a time (what follows is srun's), then exec srun_agent_arguments. Returns only on an error.
int start_job_link();

}  // namespace ferry::agent::run

// A run that is a Slurm job (run/start with `slurm`, on a cluster's login node). The run's process
// is this agent as `--slurm-job RUN_DIR`, the follower: it submits the job with sbatch, relays the
// job's output files to the run's stdout and stderr as they grow, says on stderr when the job is
// pending (with Slurm's reason) and where it runs, turns the run's signals into scancel (INT and
// TERM reach the program, so ferry-train checkpoints; a second TERM or HUP cancels), and exits
// with the job's status. On the compute node the batch script is `ferry-agent --slurm-step`: it
// runs the program and records its status in the run dir, which the follower watches, so
// slurmctld is asked only every few seconds. Everything lives in the run's own dir.
#pragma once

#include <expected>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/slurm_job.hpp"

namespace ferry::agent::run {

struct SlurmRunFiles {
  std::filesystem::path request;  // slurm.json: options, argv, cwd (written by run/start)
  std::filesystem::path script;   // job.sbatch
  std::filesystem::path out, err; // the job's stdout and stderr (sbatch --output, --error)
  std::filesystem::path job_id;   // slurm-job: the id sbatch gave
  std::filesystem::path exit;     // slurm-exit: the program's status, written by --slurm-step
  std::filesystem::path state;    // slurm-state: where the job stands, as the follower last saw it
  static SlurmRunFiles in(const std::filesystem::path& run_dir);
};

// run/start's part: the request the follower reads. `cwd` is absolute on the login node (and, on
// a cluster, on the compute nodes: the same shared filesystem).
// `env`: the run's environment, of which PATH and the SLURM_* variables are kept for the agent's
// own scancel (spec.json, which holds the rest, is gone once the run started).
std::expected<void, std::string> write_slurm_request(const std::filesystem::path& run_dir, const protocol::SlurmJobOptions& options,
                                                     const std::vector<std::string>& argv, const std::filesystem::path& cwd,
                                                     const std::map<std::string, std::string>& env);

// This agent's file as another process must name it (the batch script's #! line, the supervisor's
// exec): agent_self_path() with /proc/self/exe resolved.
std::string agent_file_path();

// ferry-agent --slurm-job RUN_DIR: submit, follow, exit as the job did.
int follow_slurm_job(const std::filesystem::path& run_dir);
// ferry-agent --slurm-step SCRIPT: on the compute node, run what the batch script names.
int run_slurm_step(const std::filesystem::path& script);
// Where a run's job stands as its follower last saw it (run/list's slurmState); nullopt when the
// run is no job or none was seen yet.
std::optional<protocol::SlurmJobState> slurm_job_state(const std::filesystem::path& run_dir);
// The id of a run's Slurm job ("" when it is not one, or sbatch has not answered yet).
std::string slurm_job_id(const std::filesystem::path& run_dir);
// The Slurm job of a run, when it is one (its id is in the run dir), cancelled: `ferry kill`.
void cancel_slurm_job(const std::filesystem::path& run_dir);

}  // namespace ferry::agent::run

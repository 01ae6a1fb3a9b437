// An allocation (`ferry alloc`): a Slurm job that holds nodes and runs nothing of its own, so that
// an agent, runs and tunnels start inside it at once (srun --overlap), and the wire of the agent's
// slurm/* methods that make, list and end allocations. Argument vectors only: no shell reads them.
// Pure: remote-runtime/agent/run/slurm_alloc_methods.cpp does the I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/json_reader.hpp"
#include "protocol/slurm_job.hpp"

namespace ferry::protocol {

namespace method {
inline constexpr std::string_view kSlurmAllocate = "slurm/allocate";
inline constexpr std::string_view kSlurmJobs = "slurm/jobs";
inline constexpr std::string_view kSlurmCancel = "slurm/cancel";
}  // namespace method

// slurm/allocate {options, name, cwd, env} -> {jobId}. `env`: "NAME=value" entries laid over the
// agent's own environment for Slurm's commands (ferry.json's SLURM_CONF, PATH).
struct SlurmAllocateParams {
  SlurmJobOptions options;
  std::string name;
  std::string cwd;
  std::vector<std::string> env;
};
std::optional<DecodeError> from_json(const nlohmann::json& j, SlurmAllocateParams& out, const std::string& ptr = "");
nlohmann::json to_json(const SlurmAllocateParams& p);

struct SlurmJobIdResult {
  std::string job_id;
};
nlohmann::json to_json(const SlurmJobIdResult& r);
std::optional<DecodeError> from_json(const nlohmann::json& j, SlurmJobIdResult& out, const std::string& ptr = "");

// slurm/jobs {name, env} -> {jobs: [...]}: this user's jobs of that name that Slurm still holds.
// slurm/cancel {jobId, name, env} -> {}: ends the job when it is this user's and has that name.
struct SlurmJobsParams {
  std::string name;
  std::string job_id;  // slurm/cancel only
  std::vector<std::string> env;
};
std::optional<DecodeError> from_json(const nlohmann::json& j, SlurmJobsParams& out, const std::string& ptr = "");
nlohmann::json to_json(const SlurmJobsParams& p);

struct SlurmJobInfo {
  std::string job_id;
  std::string state;       // PENDING, RUNNING, COMPLETING, ...
  std::string reason;      // why it pends ("Resources", "Priority"); "None" when running
  std::string nodes;       // "n1", "n[1-2]"; "" while pending
  std::string time_left;   // squeue's %L: "59:58", "1-02:03:04", "UNLIMITED"
  std::string time_limit;  // squeue's %l
};
struct SlurmJobsResult {
  std::vector<SlurmJobInfo> jobs;
};
nlohmann::json to_json(const SlurmJobsResult& r);
std::optional<DecodeError> from_json(const nlohmann::json& j, SlurmJobsResult& out, const std::string& ptr = "");

// "ferry-alloc-<project name>-<8 hex digits>", with what Slurm's job names do not take (spaces,
// commas) as '_'; the digits are a hash of the project's remote root (its first mapping's, as
// ferry.json writes it), so that two projects of the same name, synced to two places on the
// cluster, hold allocations of their own, while every checkout of one project finds the same.
std::string allocation_job_name(std::string_view project_name, std::string_view remote_root);

// sbatch's arguments for an allocation (its script is hold_script): its output goes nowhere.
std::vector<std::string> allocation_sbatch_arguments(const SlurmJobOptions& o, const std::string& job_name, const std::string& cwd);
// "#!<agent> --slurm-hold": the batch step waits for the job's end and does nothing else.
std::string hold_script(const std::string& agent);

// squeue for this user's jobs named `job_name`, one "%i|%T|%r|%N|%L|%l" line each, and its output.
std::vector<std::string> squeue_arguments(const std::string& job_name);
std::vector<SlurmJobInfo> parse_squeue(std::string_view out);

// What the login node's agent execs to start an agent inside job `job_id` (on `node`, or the
// job's first node when empty): srun carries its stdin and stdout, which are ferry's link.
std::vector<std::string> srun_agent_arguments(const std::string& job_id, const std::string& node, const std::string& agent,
                                              const std::string& root, const std::string& state_dir);

// What a run inside an allocation runs before its own argv: an overlapping step of one task (on
// `node`, when given), its stdio carried by srun (`tty`: srun --pty, for pdb and ipython), a single
// SIGINT handed to the program (--disable-status) as SIGTERM is by default.
// `nodes` > 1 (a training over the allocation's nodes): one task on each of that many nodes, the
// step ended when one fails, and no node named.
std::vector<std::string> srun_step_arguments(const std::string& job_id, const std::string& node, bool tty, int nodes = 1);
// A run's argv read back: the job and the program's argv when it starts with srun_step_arguments.
struct AllocationStep {
  std::string job_id;
  std::vector<std::string> argv;
};
std::optional<AllocationStep> allocation_step_of(const std::vector<std::string>& argv);

// Seconds in a Slurm duration ("59:58", "2:00:00", "1-02:03:04", "30"); nullopt for UNLIMITED,
// INVALID or anything else.
std::optional<long> slurm_duration_seconds(std::string_view text);

}  // namespace ferry::protocol

// A run as a Slurm job: the job's options (ferry.json's `slurm` block, run/start's `slurm`), the
// sbatch arguments made from them (an argument vector: no shell reads them), the batch script
// (a shebang naming ferry-agent and the program's argv as JSON: no shell there either), and the
// job's end as Slurm reports it turned into an exit status. Pure functions: the agent's
// remote-runtime/agent/run/slurm_job.cpp does the I/O.
#pragma once

#include <expected>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::protocol {

struct SlurmJobOptions {
  std::string partition;   // "" everywhere: the cluster's default
  std::string account;
  std::string qos;
  std::string time;        // sbatch --time: "30", "2:00:00", "1-12:00:00"
  std::string constraint;
  int nodes = 1;
  int gpus_per_node = 0;   // --gpus-per-node (0: not asked)
  int cpus_per_task = 0;   // --cpus-per-task (0: not asked)
  std::vector<std::string> sbatch_options;  // more, each one argument as sbatch takes it ("--mem=32G")
};
nlohmann::json to_json(const SlurmJobOptions& o);
// The `slurm` object as ferry.json and run/start spell it (camelCase); the error names the field.
std::expected<SlurmJobOptions, std::string> slurm_options_from_json(const nlohmann::json& j);

// sbatch's arguments before the script: --parsable, the job's name, its output files, the
// working directory, then the options. --export=ALL: the job gets the run's environment.
std::vector<std::string> sbatch_arguments(const SlurmJobOptions& o, const std::string& job_name,
                                          const std::string& stdout_file, const std::string& stderr_file,
                                          const std::string& cwd);

// The batch script: "#!<agent> --slurm-step" and one line of JSON with the argv (through srun,
// one task per node, when the job has more than one node). Slurm copies it to the node and runs it;
// the agent there reads the JSON and execs the program.
// `exit_file`: where the step writes the program's exit status (the follower's sign that it ended).
std::string batch_script(const std::string& agent, const std::vector<std::string>& argv, const SlurmJobOptions& o,
                         const std::string& exit_file);
// What --slurm-step runs: the argv and exit file from a batch script's text.
struct SlurmStep {
  std::vector<std::string> argv;
  std::string exit_file;
};
std::expected<SlurmStep, std::string> slurm_step_of(std::string_view script);

// `scontrol show job -o ID`'s one line as key -> value ("JobState" -> "PENDING").
std::map<std::string, std::string> parse_scontrol_line(std::string_view line);

// A job's end: its state (COMPLETED, FAILED, CANCELLED, TIMEOUT, ...) and Slurm's ExitCode "N:S".
// The status ferry exits with: N, or 128+S when a signal ended it; a state other than COMPLETED
// with N and S both 0 (cancelled before it ran, a node failure) is 1, never 0.
int slurm_exit_status(std::string_view state, std::string_view exit_code);
// States from which a job does not come back.
bool slurm_state_is_final(std::string_view state);

// Where a run's job stands, as its follower last saw it (run/list's `slurmState`): squeue's state,
// reason, nodes and time left while Slurm holds the job; its final state once it ended.
struct SlurmJobState {
  std::string state;      // PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, PREEMPTED, CANCELLED, ...
  std::string reason;     // while pending
  std::string nodes;
  std::string time_left;  // squeue's %L while it runs
  int ahead = -1;         // while it pends: jobs before it in its partition's queue (-1 unknown)
};
nlohmann::json to_json(const SlurmJobState& s);
std::optional<SlurmJobState> slurm_job_state_from_json(const nlohmann::json& j);
// "PENDING (Resources, 2 ahead)", "RUNNING on n1, 58:40 left", "TIMEOUT".
std::string describe_slurm_state(const SlurmJobState& s);

// The follower's lines (after "ferry: " on the run's stderr) about where a job stands: "job 12
// pending (Resources)", "job 12 running on n1". The agent writes them; ferry serve reads them back
// to show a job's wait as the editor's progress.
// `ahead` >= 0: "job 12 pending (Priority), 2 jobs ahead".
std::string slurm_pending_line(const std::string& job_id, const std::string& reason, int ahead = -1);
std::string slurm_running_line(const std::string& job_id, const std::string& nodes);
struct SlurmWaitLine {
  std::string job_id;
  bool running = false;
  std::string detail;  // the reason while it pends, the nodes once it runs
  int ahead = -1;      // while it pends, when known
};
// The words of a pending job's place: "pending (Priority), 2 jobs ahead".
std::string pending_words(const std::string& reason, int ahead);

// The queue a pending job waits in: pending jobs of `partition` in the order Slurm weighs them
// (priority, then id), one id a line; and how many stand before `job_id` there (nullopt: not in it).
std::vector<std::string> pending_queue_arguments(const std::string& partition);
std::optional<int> jobs_ahead(std::string_view squeue_ids, std::string_view job_id);
// One line of stderr ("ferry: " in front, newline or not); nullopt for any other line.
std::optional<SlurmWaitLine> parse_slurm_wait_line(std::string_view line);

}  // namespace ferry::protocol

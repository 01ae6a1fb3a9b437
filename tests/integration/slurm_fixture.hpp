// A real Slurm cluster on this machine for integration tests: munged with its own key and socket,
// slurmctld and two slurmd (nodes n1 and n2 on 127.0.0.1) from a slurm.conf in a temp dir, on
// free loopback ports and under a cluster name of its own, so clusters in parallel tests never meet.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace ferry::test {

struct SlurmOptions {
  int cpus_per_node = 2;
  // Seconds slurmctld keeps a finished job where squeue/scontrol see it (Slurm's MinJobAge); after
  // that the job is only in the jobcomp file. Small values let a test see the job forgotten.
  int min_job_age_s = 300;
  std::string extra_conf;  // appended to slurm.conf
};

// What Slurm says of one job. `source` is "scontrol" while slurmctld knows the job, "jobcomp" once
// only the jobcomp file does (there is no slurmdbd, so no sacct), "" when neither knows it.
struct SlurmJobState {
  std::string state;   // PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
  int exit_code = -1;  // ExitCode=N:S's N (-1 unknown)
  int signal = 0;      // ExitCode=N:S's S: the signal that ended the script
  std::string reason;  // scontrol's Reason= (why a job pends); "" from the jobcomp file
  std::string nodes;   // NodeList=
  std::string source;
  // A state Slurm never leaves (not PENDING, RUNNING, COMPLETING, ...).
  bool final() const;
};

// A Slurm client command run to its end: exit status (-1: not a normal exit), stdout, stderr.
struct SlurmRun {
  int status = -1;
  std::string out;
  std::string err;
};

class SlurmCluster {
 public:
  // Starts everything and returns once both nodes are idle; throws (with the daemons' logs) when
  // that does not happen in time, after stopping what it started. First kills the job steps of
  // clusters whose test process died (their daemons died with it) and removes their directories.
  explicit SlurmCluster(SlurmOptions options = {});
  // Stops slurmctld and both slurmd, kills what they leave (job steps, what jobs started, anything
  // else of slurm_processes(dir()): whatever has SLURM_CONF naming this cluster goes too), stops
  // munged, and waits until all are gone.
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  const std::filesystem::path& dir() const { return dir_.path(); }
  std::filesystem::path conf() const { return dir() / "slurm.conf"; }  // for SLURM_CONF
  std::filesystem::path jobcomp_file() const { return dir() / "jobcomp.txt"; }
  const std::string& cluster_name() const { return name_; }
  // "SLURM_CONF='<conf>' ": put before a client command run by a shell.
  std::string env_prefix() const;
  std::vector<std::string> node_names() const { return {"n1", "n2"}; }
  std::string partition() const { return "main"; }          // n1 and n2, the default
  std::string second_partition() const { return "second"; }  // n2 only
  // Milliseconds from the constructor's start until both nodes were idle.
  long start_ms() const { return start_ms_; }

  // Runs a shell command line with SLURM_CONF exported (stdin /dev/null).
  SlurmRun run(const std::string& command) const;
  // sbatch --parsable ARGS; the job id. Throws with sbatch's stderr when it fails.
  std::string submit(const std::string& args) const;
  SlurmJobState job_state(const std::string& job_id) const;
  // Polls job_state until it is final or `limit` passes; the last state seen.
  SlurmJobState wait_job(const std::string& job_id, std::chrono::milliseconds limit) const;
  // Live processes of this cluster: its daemons, job steps, and what jobs started.
  std::vector<pid_t> processes() const;
  // The daemons' logs, for a failing test's message.
  std::string logs() const;

 private:
  struct Daemon {
    std::string name;
    pid_t pid = -1;
  };
  void start(const SlurmOptions& options);
  void start_munged();
  void write_conf(const SlurmOptions& options) const;
  void start_daemons(std::chrono::milliseconds limit);
  void wait_until_idle(std::chrono::milliseconds limit);
  void check_daemons_alive();
  void stop_slurm_daemons();
  void stop() noexcept;

  TempDir dir_{"ferry-slurm"};
  std::string name_;
  int ctld_port_ = 0;
  std::vector<int> node_ports_;
  std::vector<Daemon> daemons_;  // started in this order, stopped in reverse
  long start_ms_ = 0;
};

// Live (not zombie) processes other than this one that belong to the cluster in `dir`: a command
// line naming it (the daemons, job scripts in its spool), an open file under it (slurmstepd's log),
// SLURM_CONF pointing at its slurm.conf (what jobs started, also once orphaned), and their children.
std::vector<pid_t> slurm_processes(const std::filesystem::path& dir);

}  // namespace ferry::test

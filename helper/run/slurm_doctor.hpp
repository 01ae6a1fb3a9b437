// `ferry doctor` on a Slurm cluster's login node: are Slurm's commands there, which version, and
// is ferry.json's partition one the cluster has (up, with how many nodes), in one SSH exec; then,
// when that passed, whether a compute node of the partition sees the mapping roots and
// ~/.cache/ferry (a second exec: a marker written on the login node, read back through srun).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "helper/remote/ssh_endpoint.hpp"
#include "protocol/slurm_job.hpp"

namespace ferry::run {

// The login node's script: ferry.json's env exported (each value quoted), then key=value lines
// (missing=, version=, partitions= as sinfo's "%P|%a|%D" lines joined by ';').
std::string slurm_probe_script(const std::map<std::string, std::string>& env);
// Its output judged against the options.
remote::DoctorCheck slurm_check_of(std::string_view probe_output, const protocol::SlurmJobOptions& options);

// Where ferry's agent, run folders and trainer live on the login node; the jobs run them from there.
inline constexpr std::string_view kFerryCacheDir = "~/.cache/ferry";
// How long the node probe may wait for the queue to start it (srun --immediate).
inline constexpr int kNodeProbeWaitSeconds = 15;

// The paths the node probe checks, as ferry.json spells them: each mapping's remote root once, then
// kFerryCacheDir.
std::vector<std::string> node_probe_paths(const std::vector<std::string>& mapping_roots);
// The login node's second script: ferry.json's env exported, then for each path (N from 1) a marker
// file holding `nonce` written in it, or before the first sync in its nearest existing parent
// (lines rootN= the path resolved, dirN= where the marker went, "!" first when it could not be
// written); one srun task (-N1 -n1, --time=1, --immediate=wait_s, the options' partition, account,
// qos and constraint) prints node= and seenN= (what it read of each marker); srun_status= and
// srun_err= (its stderr on one line) follow. The markers are removed when the script ends. Every
// ferry.json value is a quoted word.
std::string slurm_node_probe_script(const std::map<std::string, std::string>& env, const protocol::SlurmJobOptions& options,
                                    const std::vector<std::string>& paths, std::string_view nonce, int wait_s);
// Its output judged: pass when the node read every marker, FAIL naming what it did not see and
// what to do, warn "not checked" when no node ran the probe (a busy queue, srun's error) or a marker
// could not be written.
remote::DoctorCheck slurm_node_check_of(std::string_view probe_output, const std::vector<std::string>& paths,
                                        std::string_view nonce, int wait_s);

// The slurm line, then the "slurm nodes" line (not checked when the slurm line is not a pass).
std::vector<remote::DoctorCheck> doctor_slurm_checks(remote::SshEndpoint& e, const protocol::SlurmJobOptions& options,
                                                     const std::map<std::string, std::string>& env,
                                                     const std::vector<std::string>& mapping_roots);

}  // namespace ferry::run

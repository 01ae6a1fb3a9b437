// `ferry doctor` on a Slurm cluster's login node: are Slurm's commands there, which version, and
// is ferry.json's partition one the cluster has (up, with how many nodes). One SSH exec.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "helper/remote/ssh_endpoint.hpp"
#include "protocol/slurm_job.hpp"

namespace ferry::run {

// The login node's script: ferry.json's env exported (each value quoted), then key=value lines
// (missing=, version=, partitions= as sinfo's "%P|%a|%D" lines joined by ';').
std::string slurm_probe_script(const std::map<std::string, std::string>& env);
// Its output judged against the options.
remote::DoctorCheck slurm_check_of(std::string_view probe_output, const protocol::SlurmJobOptions& options);

remote::DoctorCheck doctor_slurm_check(remote::SshEndpoint& e, const protocol::SlurmJobOptions& options,
                                       const std::map<std::string, std::string>& env);

}  // namespace ferry::run

// ferry.json's tunnels, opened when the editor's link comes up. A Slurm project's go where its
// work runs: to its allocation's node while one runs (`ferry alloc`), else to the login node, and
// they move when the allocation comes or goes, on the same local ports.
#pragma once

#include <stop_token>
#include <vector>

#include "helper/deploy/project_config.hpp"
#include "helper/remote/endpoint.hpp"

namespace ferry::server {

class ProjectLink;

// Opens ferry.json's tunnels on `endpoint`: the ids of those opened; one that fails is logged and
// skipped.
std::vector<int> open_project_tunnels(remote::Endpoint& endpoint, const deploy::ProjectConfig& config);

// A Slurm project's ferry.json tunnels for the life of `link` (work for ProjectLink's
// start_background): placed at once, then Slurm is asked again every kAllocationRefresh while no
// allocation holds them, and the node's agent is looked at every second while one does (its end
// brings them back to the login node without waiting for Slurm).
void keep_tunnels_with_allocation(ProjectLink& link, std::stop_token stop);

}  // namespace ferry::server

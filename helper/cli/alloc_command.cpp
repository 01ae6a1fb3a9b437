// ferry alloc: an allocation on the project's Slurm cluster that holds nodes until released or its
// time limit (salloc --no-shell, but found again by name from any terminal or editor); while it
// runs, ferry run, ferry tunnel and ferry debug go to its first node (docs/slurm.md).
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <string>

#include "common/wakeup.hpp"
#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/run/slurm_allocation.hpp"

namespace ferry::cli {

namespace {

struct AllocOptions {
  bool status = false;
  bool release = false;
  std::optional<int> nodes;
  std::string time;
  std::string partition;
  std::optional<int> gpus_per_node;
};

protocol::SlurmJobOptions job_options(const deploy::ProjectConfig& project, const AllocOptions& o) {
  protocol::SlurmJobOptions options = *project.slurm;
  if (o.nodes) options.nodes = *o.nodes;
  if (!o.time.empty()) options.time = o.time;
  if (!o.partition.empty()) options.partition = o.partition;
  if (o.gpus_per_node) options.gpus_per_node = *o.gpus_per_node;
  return options;
}

int release_all(remote::Endpoint& login, const deploy::ProjectConfig& project, const std::vector<run::SlurmJobInfo>& jobs) {
  if (jobs.empty()) {
    std::cerr << "ferry alloc: this project has no allocation\n";
    return exit_status::kOk;
  }
  int rc = exit_status::kOk;
  for (const auto& j : jobs) {
    if (auto r = run::release(login, project, j.job_id); !r) {
      std::cerr << "ferry alloc: cannot cancel Slurm job " << j.job_id << ": " << r.error().message << "\n";
      rc = exit_status::kFailed;
    } else {
      std::cerr << "ferry alloc: released allocation " << j.job_id << "\n";
    }
  }
  return rc;
}

// Submits, then waits for the nodes: Ctrl-C while it pends takes the request back.
int new_allocation(remote::Endpoint& login, const deploy::ProjectConfig& project, const AllocOptions& o) {
  platform::StopRequests stop;
  auto id = run::allocate(login, project, job_options(project, o));
  if (!id) {
    std::cerr << "ferry alloc: " << id.error().message << "\n";
    return exit_status::kFailed;
  }
  std::cerr << "ferry: Slurm job " << *id << " submitted (allocation)\n";
  auto running = run::wait_running(
      login, project, *id, [](const run::SlurmJobInfo& j) { std::cerr << "ferry: " << run::describe_allocation(j) << "\n"; },
      run::pause_on(stop.wakeup()));
  if (!running) {
    if (running.error().code == protocol::error_code::kRequestCancelled) {
      (void)run::release(login, project, *id);
      std::cerr << "ferry alloc: interrupted; allocation " << *id << " cancelled\n";
      return exit_status::kInterrupted;
    }
    std::cerr << "ferry alloc: " << running.error().message << "\n";
    return exit_status::kFailed;
  }
  std::cout << run::describe_allocation(*running) << std::endl;
  std::cerr << "ferry: runs, tunnels and ferry debug go there until `ferry alloc --release` or the time limit\n";
  return exit_status::kOk;
}

int run_alloc(const GlobalOptions& g, const AllocOptions& o) {
  auto project = find_cli_project(g);
  if (!project) {
    std::cerr << "ferry alloc: " << project.error() << "\n";
    return exit_status::kUsage;
  }
  if (!project->slurm) {
    std::cerr << "ferry alloc: " << project->root.string() << "/ferry.json has no \"slurm\" block: the host is not a Slurm "
                 "cluster (ferry init --slurm; docs/slurm.md)\n";
    return exit_status::kUsage;
  }
  auto made = sync::make_project_endpoint(*project, cli_endpoint_options(g));
  if (!made) {
    std::cerr << "ferry alloc: " << made.error().message << "\n";
    return exit_status::kUsage;
  }
  if (!connect_cli_endpoint(*made, "ferry alloc")) return exit_status::kFailed;
  remote::Endpoint& login = *made->endpoint;
  auto jobs = run::allocations(login, *project);
  if (!jobs) {
    std::cerr << "ferry alloc: " << jobs.error().message << "\n";
    return exit_status::kFailed;
  }
  if (o.release) return release_all(login, *project, *jobs);
  if (!jobs->empty() || o.status) {
    for (const auto& j : *jobs) std::cout << run::describe_allocation(j) << "\n";
    if (jobs->empty()) std::cerr << "ferry alloc: this project has no allocation (ferry alloc makes one)\n";
    return jobs->empty() ? exit_status::kFailed : exit_status::kOk;
  }
  return new_allocation(login, *project, o);
}

}  // namespace

void add_alloc_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<AllocOptions>();
  auto* cmd = app.add_subcommand("alloc", "Hold nodes on the project's Slurm cluster: runs, tunnels and ferry debug go there "
                                          "until --release or the time limit (docs/slurm.md)");
  cmd->add_flag("--status", o->status, "Show the project's allocation (exit 1 when there is none)");
  cmd->add_flag("--release", o->release, "End the project's allocation");
  cmd->add_option("--nodes", o->nodes, "Nodes to hold (default: ferry.json's slurm.nodes)")->check(CLI::Range(1, 100000));
  cmd->add_option("--time", o->time, "Time limit, e.g. 1:00:00 (default: ferry.json's slurm.time)");
  cmd->add_option("--partition", o->partition, "Partition (default: ferry.json's slurm.partition)");
  cmd->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per node (default: ferry.json's slurm.gpusPerNode)")
      ->check(CLI::Range(0, 100000));
  cmd->callback([&g, o] { g.exit_code = run_alloc(g, *o); });
}

}  // namespace ferry::cli

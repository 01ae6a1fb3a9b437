// `ferry alloc` on the helper's side: an allocation for the project asked of the login node's
// agent (slurm/allocate), found again by its job name (slurm/jobs, so a terminal and an editor
// share it), waited for until it runs, and ended (slurm/cancel); and the endpoint inside it
// (remote::JobEndpoint) where runs, tunnels and the debugger go while it lives.
#pragma once

#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/wakeup.hpp"
#include "helper/deploy/project_config.hpp"
#include "helper/remote/job_endpoint.hpp"
#include "helper/run/launch_spec.hpp"
#include "protocol/slurm_alloc.hpp"

namespace ferry::run {

using protocol::SlurmJobInfo;

// ferry.json's env as Slurm's commands need it: PATH and SLURM_* ("NAME=value").
std::vector<std::string> slurm_env(const deploy::ProjectConfig& project);

// Submits the allocation with the project's slurm options (`options` wins where given); its id.
std::expected<std::string, protocol::ResponseError> allocate(remote::Endpoint& login, const deploy::ProjectConfig& project,
                                                             const protocol::SlurmJobOptions& options);
// The project's allocations that Slurm still holds (pending or running), oldest first.
std::expected<std::vector<SlurmJobInfo>, protocol::ResponseError> allocations(remote::Endpoint& login,
                                                                            const deploy::ProjectConfig& project);
// The first running one, if any.
std::expected<std::optional<SlurmJobInfo>, protocol::ResponseError> running_allocation(remote::Endpoint& login,
                                                                                      const deploy::ProjectConfig& project);
std::expected<void, protocol::ResponseError> release(remote::Endpoint& login, const deploy::ProjectConfig& project,
                                                      const std::string& job_id);

// Asks slurm/jobs until the job runs: its state then. `on_change` hears each new state or reason
// while it pends; between asks `pause(interval)` waits, and its true (a Ctrl-C, an editor's cancel)
// ends the wait with kRequestCancelled. A job that ends or is gone before it runs is an error.
using Pause = std::function<bool(std::chrono::milliseconds)>;
std::expected<SlurmJobInfo, protocol::ResponseError> wait_running(remote::Endpoint& login, const deploy::ProjectConfig& project,
                                                                  const std::string& job_id,
                                                                  const std::function<void(const SlurmJobInfo&)>& on_change,
                                                                  const Pause& pause,
                                                                  std::chrono::milliseconds interval = std::chrono::seconds(1));
// A Pause on a Wakeup (the terminal's Ctrl-C).
Pause pause_on(platform::Wakeup& stop);

// The first host of a Slurm node list: "n1" of "n[1-2]", "n1,n2" or "n1"; "gpu003" of "gpu[003-004,7]".
std::string first_node(std::string_view nodelist);

// "allocation 12 on n1 (58:40 left of 1:00:00)" / "allocation 12 pending (Resources)".
std::string describe_allocation(const SlurmJobInfo& job);

// A Slurm project's run goes into its running allocation when it has one (an srun step there,
// at once: request.allocation set), and is a job of its own otherwise (request.slurm, as set by the
// caller). The allocation it went into, if any; an error when Slurm could not be asked.
std::expected<std::optional<SlurmJobInfo>, protocol::ResponseError> place_run(remote::Endpoint& login,
                                                                             const deploy::ProjectConfig& project,
                                                                             LaunchRequest& request);

// An agent inside the allocation's first node, connected: the endpoint for runs, tunnels and the
// debugger while it lives. `login` must be connected and outlive it.
std::expected<std::unique_ptr<remote::JobEndpoint>, protocol::ResponseError> open_allocation_endpoint(
    remote::SshEndpoint& login, const deploy::ProjectConfig& project, const SlurmJobInfo& job);

}  // namespace ferry::run

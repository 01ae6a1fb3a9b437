// ferry alloc's helper side: see slurm_allocation.hpp.
#include "helper/run/slurm_allocation.hpp"

#include "protocol/jsonrpc.hpp"

namespace ferry::run {

namespace ec = protocol::error_code;
using protocol::ResponseError;

std::vector<std::string> slurm_env(const deploy::ProjectConfig& project) {
  std::vector<std::string> env;
  for (const auto& [k, v] : project.env)
    if (k == "PATH" || k.starts_with("SLURM_")) env.push_back(k + "=" + v);
  return env;
}

namespace {

std::string job_name(const deploy::ProjectConfig& project) {
  return protocol::allocation_job_name(project.name, project.mappings.empty() ? std::string() : project.mappings.front().remote);
}

std::expected<protocol::SlurmJobsResult, ResponseError> list_jobs(remote::Endpoint& login, const deploy::ProjectConfig& project,
                                                                 std::string_view method, const std::string& job_id = {}) {
  auto r = login.call(method, to_json(protocol::SlurmJobsParams{job_name(project), job_id, slurm_env(project)}), std::chrono::seconds(90));
  if (!r) return std::unexpected(r.error());
  protocol::SlurmJobsResult result;
  if (auto e = from_json(*r, result)) return std::unexpected(ResponseError{ec::kInternalError, std::string(method) + ": " + e->to_string(), {}});
  return result;
}

}  // namespace

std::expected<std::string, ResponseError> allocate(remote::Endpoint& login, const deploy::ProjectConfig& project,
                                                   const protocol::SlurmJobOptions& options) {
  protocol::SlurmAllocateParams p{options, job_name(project), login.info().root, slurm_env(project)};
  auto r = login.call(protocol::method::kSlurmAllocate, to_json(p), std::chrono::seconds(150));
  if (!r) return std::unexpected(r.error());
  protocol::SlurmJobIdResult id;
  if (auto e = from_json(*r, id)) return std::unexpected(ResponseError{ec::kInternalError, "slurm/allocate: " + e->to_string(), {}});
  return id.job_id;
}

std::expected<std::vector<SlurmJobInfo>, ResponseError> allocations(remote::Endpoint& login, const deploy::ProjectConfig& project) {
  auto r = list_jobs(login, project, protocol::method::kSlurmJobs);
  if (!r) return std::unexpected(r.error());
  return std::move(r->jobs);
}

std::expected<std::optional<SlurmJobInfo>, ResponseError> running_allocation(remote::Endpoint& login,
                                                                            const deploy::ProjectConfig& project) {
  auto all = allocations(login, project);
  if (!all) return std::unexpected(all.error());
  for (const auto& j : *all)
    if (j.state == "RUNNING") return j;
  return std::nullopt;
}

std::expected<void, ResponseError> release(remote::Endpoint& login, const deploy::ProjectConfig& project, const std::string& job_id) {
  auto r = list_jobs(login, project, protocol::method::kSlurmCancel, job_id);
  if (!r) return std::unexpected(r.error());
  return {};
}

std::expected<SlurmJobInfo, ResponseError> wait_running(remote::Endpoint& login, const deploy::ProjectConfig& project,
                                                        const std::string& job_id,
                                                        const std::function<void(const SlurmJobInfo&)>& on_change, const Pause& pause,
                                                        std::chrono::milliseconds interval) {
  SlurmJobInfo last;
  for (;;) {
    auto all = allocations(login, project);
    if (!all) return std::unexpected(all.error());
    const SlurmJobInfo* job = nullptr;
    for (const auto& j : *all)
      if (j.job_id == job_id) job = &j;
    if (!job) return std::unexpected(ResponseError{ec::kIoError, "Slurm job " + job_id + " ended before it ran (squeue no longer lists it)", {}});
    if (job->state == "RUNNING") return *job;
    if (job->state != last.state || job->reason != last.reason) {
      last = *job;
      if (on_change) on_change(*job);
    }
    if (protocol::slurm_state_is_final(job->state))
      return std::unexpected(ResponseError{ec::kIoError, "Slurm job " + job_id + " ended (" + job->state + ") before it ran", {}});
    if (pause(interval))
      return std::unexpected(ResponseError{ec::kRequestCancelled, "interrupted while Slurm job " + job_id + " was pending", {}});
  }
}

Pause pause_on(platform::Wakeup& stop) {
  return [&stop](std::chrono::milliseconds interval) {
    platform::Wakeup* w[] = {&stop};
    return platform::wait_any(w, interval) == 0;
  };
}

std::string first_node(std::string_view nodelist) {
  const auto bracket = nodelist.find('[');
  const auto comma = nodelist.find(',');
  if (bracket == std::string_view::npos || (comma != std::string_view::npos && comma < bracket))
    return std::string(nodelist.substr(0, comma));
  std::string_view inside = nodelist.substr(bracket + 1);
  const auto end = inside.find_first_of("-,]");
  return std::string(nodelist.substr(0, bracket)) + std::string(inside.substr(0, end));
}

std::string describe_allocation(const SlurmJobInfo& job) {
  if (job.state == "RUNNING") {
    std::string s = "allocation " + job.job_id + " on " + job.nodes;
    if (!job.time_left.empty())
      s += " (" + job.time_left + " left" + (job.time_limit.empty() ? "" : " of " + job.time_limit) + ")";
    return s;
  }
  return "allocation " + job.job_id + " " + (job.state == "PENDING" ? "pending" : job.state) +
         (job.reason.empty() || job.reason == "None" ? "" : " (" + job.reason + ")");
}

std::expected<std::optional<SlurmJobInfo>, ResponseError> place_run(remote::Endpoint& login, const deploy::ProjectConfig& project,
                                                                   LaunchRequest& request) {
  if (!project.slurm) return std::nullopt;
  auto job = running_allocation(login, project);
  if (!job) return std::unexpected(job.error());
  if (*job) {
    request.allocation = (*job)->job_id;
    request.allocation_node = first_node((*job)->nodes);  // where JobEndpoint's agent runs: tunnels reach it
  }
  return *job;
}

std::expected<std::unique_ptr<remote::JobEndpoint>, ResponseError> open_allocation_endpoint(remote::SshEndpoint& login,
                                                                                           const deploy::ProjectConfig& project,
                                                                                           const SlurmJobInfo& job) {
  auto e = std::make_unique<remote::JobEndpoint>(login, remote::JobTarget{job.job_id, first_node(job.nodes), login.info().root, slurm_env(project)});
  if (auto info = e->connect(std::chrono::seconds(60)); !info) return std::unexpected(info.error());
  return e;
}

}  // namespace ferry::run

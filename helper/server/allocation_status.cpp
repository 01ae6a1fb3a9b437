// AllocationStatus: see allocation_status.hpp.
#include "helper/server/allocation_status.hpp"

#include <spdlog/spdlog.h>

#include "helper/run/slurm_allocation.hpp"

namespace ferry::server {

std::optional<protocol::GpuSlurmStatus> AllocationStatus::status(remote::Endpoint& login, const deploy::ProjectConfig& project) {
  if (!project.slurm) return std::nullopt;
  const auto now = std::chrono::steady_clock::now();
  std::string warning;
  protocol::GpuSlurmStatus out;
  {
    std::lock_guard lock(mutex_);
    if (!fetched_once_ || project_root_ != project.root.string() || now - fetched_ >= kAllocationRefresh) {
      auto job = run::running_allocation(login, project);
      if (!job) {
        spdlog::debug("allocation status: {}", job.error().message);
        return out;  // Slurm could not be asked: nothing shown rather than an error in the status bar
      }
      job_ = *job;
      left_at_fetch_ = job_ ? protocol::slurm_duration_seconds(job_->time_left) : std::nullopt;
      fetched_ = now;
      fetched_once_ = true;
      project_root_ = project.root.string();
    }
    if (!job_) return out;
    out.allocation = job_;
    if (left_at_fetch_) {
      const long elapsed = static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(now - fetched_).count());
      out.seconds_left = std::max(0L, *left_at_fetch_ - elapsed);
      if (*out.seconds_left < kAllocationWarnSeconds && warned_.insert(job_->job_id).second)
        warning = "ferry: " + run::describe_allocation(*job_) + " ends in " + std::to_string(*out.seconds_left / 60) +
                  " min (its time limit): runs in it stop then; `ferry alloc` takes another";
    }
  }
  if (!warning.empty() && warn_) warn_(warning);
  return out;
}

}  // namespace ferry::server

// The Slurm side of the editor's status: a Slurm project's allocation (`ferry alloc`) where a cloud
// host's price appears (gpu/status), and a warning before its time limit ends it. squeue is asked
// at most every kRefresh: a cluster's controller is shared, and editors asking every few seconds
// would be felt there; between asks the time left is counted down here.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "helper/deploy/project_config.hpp"
#include "helper/remote/endpoint.hpp"
#include "protocol/messages_gpu.hpp"

namespace ferry::server {

inline constexpr std::chrono::seconds kAllocationRefresh{30};
inline constexpr long kAllocationWarnSeconds = 10 * 60;

class AllocationStatus {
 public:
  // `warn` says a line to the person (window/showMessage): once per allocation, when under
  // kAllocationWarnSeconds are left.
  explicit AllocationStatus(std::function<void(const std::string&)> warn) : warn_(std::move(warn)) {}

  // Nothing for a project without a slurm block; otherwise its running allocation, if any.
  std::optional<protocol::GpuSlurmStatus> status(remote::Endpoint& login, const deploy::ProjectConfig& project);

 private:
  std::function<void(const std::string&)> warn_;
  std::mutex mutex_;
  std::string project_root_;  // whose allocation is cached
  std::chrono::steady_clock::time_point fetched_{};
  bool fetched_once_ = false;
  std::optional<protocol::SlurmJobInfo> job_;
  std::optional<long> left_at_fetch_;
  std::set<std::string> warned_;  // job ids
};

}  // namespace ferry::server

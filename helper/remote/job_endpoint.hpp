// An agent inside a running Slurm job (on a compute node), reached through the cluster's login
// node: the login link's SSH connection runs `ferry-agent --job-link`, which becomes srun, which
// carries the stream to an agent on the node (docs/slurm.md, "Allocations"). Calls and runs go to
// that agent; tunnels, both ways, go through its tcp/* methods (agent_tunnel.hpp), since the node
// runs no sshd. It does not reconnect: when the login link or the job ends, so does it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "helper/remote/agent_link.hpp"
#include "helper/remote/agent_tunnel.hpp"
#include "helper/remote/endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"

namespace ferry::remote {

inline constexpr int kJobForwardIds = 1'000'001;

struct JobTarget {
  std::string job_id;
  std::string node;              // "" = the job's first node
  std::string root;              // the agent's root: the login agent's (the filesystem is shared)
  std::vector<std::string> env;  // "NAME=value" for srun and the agent (ferry.json's PATH, SLURM_*)
};

class JobEndpoint final : public Endpoint {
 public:
  // `login` must be connected and outlive this endpoint.
  JobEndpoint(SshEndpoint& login, JobTarget target) : login_(login), target_(std::move(target)) {}
  ~JobEndpoint() override { close(); }

  std::expected<AgentInfo, ResponseError> connect(std::chrono::milliseconds timeout = kDefaultHandshakeTimeout) override;
  std::expected<json, ResponseError> call(std::string_view method, json params,
                                          std::chrono::milliseconds timeout = kDefaultCallTimeout) override;
  std::expected<void, ResponseError> notify(std::string_view method, json params) override;
  const AgentInfo& info() const override { return info_; }
  bool connected() const override;
  void close() override;
  std::string description() const override;

  // Local tunnels accept here and the agent connects on the node; reverse ones have the agent
  // listen on the node's loopback (agent_tunnel.hpp).
  std::expected<ForwardInfo, ResponseError> open_forward(const ForwardSpec& spec) override;
  std::expected<void, ResponseError> close_forward(int id) override;
  std::vector<ForwardInfo> list_forwards() const override;

  const JobTarget& target() const { return target_; }

 private:
  struct Forward {
    ForwardInfo info;
    std::unique_ptr<AgentTunnel> tunnel;
  };
  AgentLink* link() const;

  SshEndpoint& login_;
  JobTarget target_;
  AgentInfo info_;
  mutable std::mutex mutex_;
  std::unique_ptr<AgentLink> link_;
  std::map<int, Forward> forwards_;
  // Apart from the login link's (which count from 1), so that an editor holding both can tell them
  // apart by id alone.
  int next_forward_id_ = kJobForwardIds;
};

}  // namespace ferry::remote

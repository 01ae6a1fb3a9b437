// JobEndpoint: see job_endpoint.hpp.
#include "helper/remote/job_endpoint.hpp"

#include "protocol/messages_tcp.hpp"

namespace ferry::remote {

namespace ec = protocol::error_code;

std::expected<AgentInfo, ResponseError> JobEndpoint::connect(std::chrono::milliseconds timeout) {
  close();
  json request{{"jobId", target_.job_id}, {"root", target_.root}, {"env", target_.env}};
  if (!target_.node.empty()) request["node"] = target_.node;
  AgentInfo info;
  auto link = login_.open_job_link(request, Clock::now() + timeout, fanout_handler(), info);
  if (!link) {
    auto e = link.error();
    e.message = "starting ferry-agent in Slurm job " + target_.job_id + ": " + e.message;
    return std::unexpected(e);
  }
  std::lock_guard lk(mutex_);
  link_ = std::move(*link);
  info_ = info;
  return info_;
}

AgentLink* JobEndpoint::link() const {
  std::lock_guard lk(mutex_);
  return link_.get();
}

std::expected<json, ResponseError> JobEndpoint::call(std::string_view method, json params, std::chrono::milliseconds timeout) {
  auto* l = link();
  if (!l) return std::unexpected(ResponseError{ec::kAgentUnavailable, "not connected to " + description(), {}});
  return l->call(method, std::move(params), timeout);
}

std::expected<void, ResponseError> JobEndpoint::notify(std::string_view method, json params) {
  auto* l = link();
  if (!l) return std::unexpected(ResponseError{ec::kAgentUnavailable, "not connected to " + description(), {}});
  return l->notify(method, std::move(params));
}

bool JobEndpoint::connected() const {
  auto* l = link();
  return l && l->alive();
}

void JobEndpoint::close() {
  std::map<int, Forward> forwards;
  std::unique_ptr<AgentLink> link;
  {
    std::lock_guard lk(mutex_);
    forwards.swap(forwards_);
  }
  forwards.clear();  // each tunnel ends its connections while the link still carries tcp/close
  {
    std::lock_guard lk(mutex_);
    link = std::move(link_);
  }
  if (link) {
    link->close_write();  // the agent exits on EOF; srun's step ends with it
    link->stop();
  }
}

std::string JobEndpoint::description() const {
  std::string where = "Slurm job " + target_.job_id;
  if (!info_.hostname.empty()) where += " on " + info_.hostname;
  return where + " (through " + login_.description() + ")";
}

std::expected<ForwardInfo, ResponseError> JobEndpoint::open_forward(const ForwardSpec& spec) {
  if (auto ok = validate_forward_spec(spec); !ok) return std::unexpected(ResponseError{ec::kInvalidParams, ok.error(), {}});
  if (!connected()) return std::unexpected(ResponseError{ec::kAgentUnavailable, "not connected to " + description(), {}});
  Forward f;
  f.info.spec = spec;
  f.info.state = protocol::ForwardState::active;
  if (spec.kind == ForwardKind::kReverse) {  // the agent listens on the node's loopback
    auto listening = call(protocol::method::kTcpListen, to_json(protocol::TcpListenParams{spec.bind_address, spec.remote_port}));
    protocol::TcpListenResult l;
    if (!listening) return std::unexpected(listening.error());
    if (auto e = from_json(*listening, l)) return std::unexpected(ResponseError{ec::kInternalError, "tcp/listen: " + e->to_string(), {}});
    f.info.bound_port = l.port;
    f.tunnel = std::make_unique<AgentTunnel>(*this, l.listener_id, spec.local_host, spec.local_port);
  } else {
    auto listener = LoopbackListener::open(spec.bind_address, spec.local_port);
    if (!listener) return std::unexpected(ResponseError{ec::kIoError, listener.error(), {}});
    f.info.bound_port = listener->port();
    f.tunnel = std::make_unique<AgentTunnel>(*this, std::move(*listener), spec.remote_host, spec.remote_port);
  }
  std::lock_guard lk(mutex_);
  f.info.id = next_forward_id_++;
  ForwardInfo info = f.info;
  forwards_.emplace(info.id, std::move(f));
  return info;
}

std::expected<void, ResponseError> JobEndpoint::close_forward(int id) {
  Forward gone;
  {
    std::lock_guard lk(mutex_);
    auto it = forwards_.find(id);
    if (it == forwards_.end()) return std::unexpected(ResponseError{ec::kInvalidParams, "no tunnel " + std::to_string(id), {}});
    gone = std::move(it->second);
    forwards_.erase(it);
  }
  return {};
}

std::vector<ForwardInfo> JobEndpoint::list_forwards() const {
  std::lock_guard lk(mutex_);
  std::vector<ForwardInfo> out;
  for (const auto& [id, f] : forwards_) {
    ForwardInfo i = f.info;
    i.accepted = f.tunnel->accepted();
    i.live = f.tunnel->live();
    out.push_back(i);
  }
  return out;
}

}  // namespace ferry::remote

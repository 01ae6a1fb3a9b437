// LocalEndpoint on POSIX: see local_endpoint.hpp.
#include "helper/remote/local_endpoint.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <system_error>

#include <spdlog/spdlog.h>

#include "helper/remote/agent_builds.hpp"

namespace ferry::remote {
namespace fs = std::filesystem;
namespace {

namespace ec = protocol::error_code;
constexpr std::chrono::milliseconds kGracefulExit{2'000};

ResponseError not_connected(std::string_view method) {
  return ResponseError{ec::kAgentUnavailable, std::string(method) + ": not connected to the agent", {}};
}

}  // namespace

LocalEndpoint::LocalEndpoint(LocalEndpointOptions options) : options_(std::move(options)) {
  if (options_.root.empty()) options_.root = default_sandbox_root(options_.project_name);
}

LocalEndpoint::~LocalEndpoint() { close(); }

std::expected<AgentInfo, ResponseError> LocalEndpoint::connect(std::chrono::milliseconds timeout) {
  close();
  auto deadline = Clock::now() + timeout;
  fs::path agent = options_.agent;
  if (agent.empty()) {
    auto found = find_agent_binary();
    if (!found) return std::unexpected(ResponseError{ec::kAgentUnavailable, found.error(), {}});
    agent = *found;
  }
  std::vector<std::string> argv{agent.string(), "--root", options_.root.string()};
  argv.insert(argv.end(), options_.agent_args.begin(), options_.agent_args.end());

  child_ = std::make_unique<ChildProcess>();
  auto spawned = child_->spawn(argv);
  if (!spawned) {
    child_.reset();
    return std::unexpected(ResponseError{ec::kAgentUnavailable, spawned.error(), {}});
  }
  spdlog::debug("started {} (pid {})", agent.string(), child_->pid());
  link_ = std::make_unique<AgentLink>(std::make_unique<FdStream>(spawned->stdout_fd, spawned->stdin_fd));
  ChildProcess* child = child_.get();
  link_->set_exit_describer([child] {
    // The stream ended; the exit status is normally there a moment later.
    auto status = child->wait_for(std::chrono::milliseconds(500));
    return status ? ChildProcess::describe_status(*status) : std::string("closed its output but is still running");
  });
  link_->set_notification_handler(fanout_handler());

  auto info = link_->handshake(deadline);
  if (!info) {
    auto err = info.error();
    stop(/*graceful=*/false);  // a half-started agent has nothing to save
    return std::unexpected(err);
  }
  info_ = *info;
  return info_;
}

std::expected<json, ResponseError> LocalEndpoint::call(std::string_view method, json params,
                                                       std::chrono::milliseconds timeout) {
  if (!link_) return std::unexpected(not_connected(method));
  return link_->call(method, std::move(params), timeout);
}

std::expected<void, ResponseError> LocalEndpoint::notify(std::string_view method, json params) {
  if (!link_) return std::unexpected(not_connected(method));
  return link_->notify(method, std::move(params));
}

void LocalEndpoint::close() {
  std::map<int, std::pair<ForwardInfo, std::unique_ptr<TcpRelay>>> forwards;
  {
    std::lock_guard lk(forwards_mutex_);
    forwards.swap(forwards_);
  }
  forwards.clear();  // each relay closes its listener and connections
  stop(/*graceful=*/true);
}

void LocalEndpoint::stop(bool graceful) {
  if (!child_ && !link_) return;
  bool alive = graceful && link_ && link_->alive();
  if (alive) {
    // Polite first: the agent answers agent/shutdown and exits; EOF on stdin also ends it.
    (void)link_->call("agent/shutdown", json::object(), std::chrono::milliseconds(500));
  }
  if (link_) link_->close_write();
  if (child_) {
    // A child that never completed the handshake (or broke the link) gets no grace period.
    auto status = child_->wait_for(alive ? kGracefulExit : std::chrono::milliseconds(0));
    if (!status) {
      if (alive) spdlog::warn("ferry-agent (pid {}) did not exit; killing it", child_->pid());
      child_->kill(SIGKILL);  // the launcher kills it alone
      status = child_->wait_for(std::chrono::hours(1));
    }
    exit_status_ = status;
  }
  if (link_) link_->stop();
  link_.reset();
  child_.reset();
}

std::string LocalEndpoint::description() const { return "local sandbox " + options_.root.string(); }

std::expected<ForwardInfo, ResponseError> LocalEndpoint::open_forward(const ForwardSpec& spec) {
  namespace ec = protocol::error_code;
  if (auto ok = validate_forward_spec(spec); !ok) return std::unexpected(ResponseError{ec::kInvalidParams, ok.error(), {}});
  bool local = spec.kind == ForwardKind::kLocal;
  auto listener = LoopbackListener::open(local ? spec.bind_address : "127.0.0.1", local ? spec.local_port : spec.remote_port);
  if (!listener) return std::unexpected(ResponseError{ec::kIoError, listener.error(), {}});
  ForwardInfo info;
  info.spec = spec;
  info.bound_port = listener->port();
  info.state = protocol::ForwardState::active;
  auto relay = std::make_unique<TcpRelay>(std::move(*listener), local ? spec.remote_host : spec.local_host,
                                          local ? spec.remote_port : spec.local_port);
  std::lock_guard lk(forwards_mutex_);
  info.id = next_forward_id_++;
  forwards_.emplace(info.id, std::make_pair(info, std::move(relay)));
  return info;
}

std::expected<void, ResponseError> LocalEndpoint::close_forward(int id) {
  std::unique_ptr<TcpRelay> relay;
  {
    std::lock_guard lk(forwards_mutex_);
    auto it = forwards_.find(id);
    if (it == forwards_.end())
      return std::unexpected(ResponseError{protocol::error_code::kInvalidParams, "no tunnel with id " + std::to_string(id), {}});
    relay = std::move(it->second.second);
    forwards_.erase(it);
  }
  relay->close();
  return {};
}

std::vector<ForwardInfo> LocalEndpoint::list_forwards() const {
  std::lock_guard lk(forwards_mutex_);
  std::vector<ForwardInfo> out;
  for (const auto& [id, entry] : forwards_) {
    ForwardInfo info = entry.first;
    info.accepted = entry.second->accepted();
    info.live = entry.second->live();
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace ferry::remote

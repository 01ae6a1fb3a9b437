// LocalEndpoint on Windows (see local_endpoint.hpp): the `local` host runs ferry-agent on this
// machine, and the agent is a Linux program. Every call says so and names what works instead.
#include "helper/remote/local_endpoint.hpp"

namespace ferry::remote {
namespace {

ResponseError not_on_windows() {
  return ResponseError{protocol::error_code::kAgentUnavailable,
                       "the `local` host runs ferry-agent on this machine, and ferry-agent is a Linux program: on "
                       "Windows, name an SSH host in ferry.json (a WSL distribution running sshd on 127.0.0.1 is one)",
                       {}};
}

}  // namespace

// No relay is made here (open_forward refuses); the endpoint's map of them still needs this.
TcpRelay::~TcpRelay() = default;

LocalEndpoint::LocalEndpoint(LocalEndpointOptions options) : options_(std::move(options)) {
  if (options_.root.empty()) options_.root = default_sandbox_root(options_.project_name);
}
LocalEndpoint::~LocalEndpoint() = default;

std::expected<AgentInfo, ResponseError> LocalEndpoint::connect(std::chrono::milliseconds) { return std::unexpected(not_on_windows()); }
std::expected<json, ResponseError> LocalEndpoint::call(std::string_view, json, std::chrono::milliseconds) {
  return std::unexpected(not_on_windows());
}
std::expected<void, ResponseError> LocalEndpoint::notify(std::string_view, json) { return std::unexpected(not_on_windows()); }
void LocalEndpoint::close() {}
void LocalEndpoint::stop(bool) {}
std::string LocalEndpoint::description() const { return "local sandbox " + options_.root.string(); }
std::expected<ForwardInfo, ResponseError> LocalEndpoint::open_forward(const ForwardSpec&) { return std::unexpected(not_on_windows()); }
std::expected<void, ResponseError> LocalEndpoint::close_forward(int) { return std::unexpected(not_on_windows()); }
std::vector<ForwardInfo> LocalEndpoint::list_forwards() const { return {}; }

}  // namespace ferry::remote

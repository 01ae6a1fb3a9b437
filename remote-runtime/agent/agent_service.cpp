// The agent's own methods: see agent_service.hpp.
#include "remote-runtime/agent/agent_service.hpp"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/posix/stat_times.hpp"
#include "ferry/version.hpp"
#include "protocol/messages.hpp"

namespace ferry::agent {
namespace {

namespace p = protocol;
namespace ec = protocol::error_code;
template <class T>
using Result = std::expected<T, p::ResponseError>;

const char* file_type(mode_t mode) {
  if (S_ISREG(mode)) return "file";
  if (S_ISDIR(mode)) return "dir";
  if (S_ISLNK(mode)) return "symlink";
  return "other";
}

Result<p::AgentHelloResult> hello(const RootPath& root, const p::AgentHelloParams& params) {
  if (params.protocol_version != kAgentProtocolVersion) {
    return std::unexpected(p::ResponseError{
        ec::kAgentVersionMismatch,
        "agent speaks protocol " + std::to_string(kAgentProtocolVersion) + ", this ferry speaks " +
            std::to_string(params.protocol_version),
        p::json{{"agentProtocolVersion", kAgentProtocolVersion}, {"agentVersion", kVersion}}});
  }
  if (params.helper_version) spdlog::debug("hello from ferry {}", *params.helper_version);
  utsname u{};
  uname(&u);
  return p::AgentHelloResult{kAgentProtocolVersion, kVersion, static_cast<std::int64_t>(getpid()), root.root().string(),
                             u.sysname, u.machine, u.nodename};
}

Result<p::FsStatResult> stat_path(const RootPath& root, const p::FsStatParams& params) {
  auto resolved = root.resolve(params.path);
  if (!resolved) return std::unexpected(p::ResponseError{ec::kInvalidParams, "fs/stat: " + resolved.error(), {}});
  struct stat st {};
  if (lstat(resolved->absolute.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return p::FsStatResult{false, resolved->relative, {}, 0, 0, 0};
    return std::unexpected(
        p::ResponseError{ec::kIoError, "fs/stat '" + resolved->relative + "': " + std::strerror(errno), {}});
  }
  return p::FsStatResult{true,
                         resolved->relative,
                         file_type(st.st_mode),
                         static_cast<std::int64_t>(st.st_size),
                         static_cast<std::int64_t>(ferry::posix::mtime_of(st)),
                         static_cast<unsigned>(st.st_mode & 07777)};
}

}  // namespace

void AgentService::bind(p::BindingTable& table) {
  table.request<p::AgentHelloParams, p::AgentHelloResult>(
      p::method::kAgentHello, [this](const p::AgentHelloParams& params, p::CallContext&) { return hello(root_, params); });
  table.request<p::AgentPingParams, p::AgentPingResult>(
      p::method::kAgentPing, [](const p::AgentPingParams& params, p::CallContext&) -> Result<p::AgentPingResult> {
        // A latency probe: lets the helper measure and test behaviour with a slow peer.
        if (params.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(params.delay_ms));
        return p::AgentPingResult{params.echo};
      });
  table.request<p::FsStatParams, p::FsStatResult>(
      p::method::kFsStat, [this](const p::FsStatParams& params, p::CallContext&) { return stat_path(root_, params); });
  table.request<p::EmptyParams, p::EmptyResult>(
      p::method::kAgentShutdown, [this](const p::EmptyParams&, p::CallContext&) -> Result<p::EmptyResult> {
        shutdown_ = true;
        return p::EmptyResult{};
      });
}

}  // namespace ferry::agent

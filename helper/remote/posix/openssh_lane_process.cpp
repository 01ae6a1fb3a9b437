// Bulk lanes through the OpenSSH client on POSIX (see openssh_lane.hpp): ssh on pipes as the
// agent's stream, and the private known_hosts directory.
#include "helper/remote/openssh_lane.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <system_error>

#include <spdlog/spdlog.h>

#include "helper/remote/byte_stream.hpp"
#include "helper/remote/child_process.hpp"

namespace ferry::remote {
namespace {

namespace fs = std::filesystem;

// A pipe of 1 MiB instead of 64 KiB: ssh and the helper each wake once per MiB, not per 64 KiB.
constexpr int kPipeBytes = 1 << 20;

// The child's pipes as a ByteStream that owns the child: closing it sends EOF to ssh (which ends
// the remote agent); a child still there a moment later is killed and reaped.
class ChildStream final : public ByteStream {
 public:
  ChildStream(std::unique_ptr<ChildProcess> child, ChildProcess::Spawned fds)
      : child_(std::move(child)), fds_(std::make_unique<FdStream>(fds.stdout_fd, fds.stdin_fd)) {}
  ~ChildStream() override {
    fds_.reset();
    (void)child_->wait_for(std::chrono::milliseconds(300));
  }
  ReadResult read_some(std::span<char> buffer, std::optional<Clock::time_point> deadline) override {
    return fds_->read_some(buffer, deadline);
  }
  std::expected<void, std::string> write_all(std::string_view bytes) override { return fds_->write_all(bytes); }
  void close_write() override { fds_->close_write(); }
  void interrupt() override { fds_->interrupt(); }
  ChildProcess& child() { return *child_; }

 private:
  std::unique_ptr<ChildProcess> child_;
  std::unique_ptr<FdStream> fds_;
};

}  // namespace

std::string openssh_transports_unavailable() { return ""; }

std::unique_ptr<LaneKnownHosts> LaneKnownHosts::create(const ssh::PublicKey& key) {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string tmpl = (base / "ferry-lane-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return nullptr;  // mode 0700
  std::unique_ptr<LaneKnownHosts> out(new LaneKnownHosts(tmpl));
  // Port 22: written bare, as OpenSSH looks an alias up (without the port).
  if (auto r = ssh::append_known_host(out->file_, kOpenSshLaneAlias, 22, key); !r) {
    spdlog::debug("lane known_hosts: {}", r.error());
    return nullptr;
  }
  return out;
}

LaneKnownHosts::~LaneKnownHosts() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::unique_ptr<AgentLink> open_openssh_lane(const OpenSshLaneSpec& spec, std::string_view key_type, const std::string& command,
                                             Clock::time_point deadline) {
  auto child = std::make_unique<ChildProcess>();
  auto spawned = child->spawn(openssh_lane_argv(spec, key_type, command));
  if (!spawned) {
    spdlog::debug("{}: OpenSSH lane: {}", spec.host.alias, spawned.error());
    return nullptr;
  }
  ::fcntl(spawned->stdout_fd, F_SETPIPE_SZ, kPipeBytes);
  ::fcntl(spawned->stdin_fd, F_SETPIPE_SZ, kPipeBytes);
  auto stream = std::make_unique<ChildStream>(std::move(child), *spawned);
  ChildProcess* raw = &stream->child();
  auto agent = std::make_unique<AgentLink>(std::move(stream));
  agent->set_exit_describer([raw] {
    auto status = raw->wait_for(std::chrono::milliseconds(500));
    return "ssh " + (status ? ChildProcess::describe_status(*status) : std::string("closed its output"));
  });
  if (auto info = agent->handshake(deadline); !info) {
    spdlog::debug("{}: OpenSSH lane did not answer: {}", spec.host.alias, info.error().message);
    agent->stop();
    return nullptr;
  }
  return agent;
}

}  // namespace ferry::remote

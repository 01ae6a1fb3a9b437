// OpenSshMux and TunnelMaster on POSIX (see openssh_mux.hpp): the master started through ChildProcess,
// its control socket (AF_UNIX) and the descriptors passed over it (SCM_RIGHTS).
#include "helper/remote/openssh_mux.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace ferry::remote {
namespace fs = std::filesystem;

OpenSshMux::OpenSshMux(std::unique_ptr<ChildProcess> child, ChildProcess::Spawned fds, fs::path control_path)
    : child_(std::move(child)), stdin_(fds.stdin_fd), stdout_(fds.stdout_fd), control_path_(std::move(control_path)) {}

OpenSshMux::~OpenSshMux() {
  child_->kill(SIGTERM);
  (void)child_->wait_for(std::chrono::milliseconds(500));  // ChildProcess kills one still there
  std::error_code ec;
  fs::remove(control_path_, ec);
}

bool OpenSshMux::running() { return !child_->wait_for(std::chrono::milliseconds(0)); }

std::unique_ptr<OpenSshMux> OpenSshMux::start(const OpenSshLaneSpec& spec, std::string_view key_type, fs::path control_path,
                                              Clock::time_point deadline, int cancel_fd) {
  // sockaddr_un holds 108 bytes; a longer TMPDIR leaves tunnels on libssh2.
  if (control_path.string().size() >= sizeof(sockaddr_un::sun_path)) {
    spdlog::debug("{}: no OpenSSH tunnel master: control path too long", spec.host.alias);
    return nullptr;
  }
  auto child = std::make_unique<ChildProcess>();
  auto spawned = child->spawn(openssh_mux_argv(spec, key_type, control_path));
  if (!spawned) {
    spdlog::debug("{}: no OpenSSH tunnel master: {}", spec.host.alias, spawned.error());
    return nullptr;
  }
  std::unique_ptr<OpenSshMux> mux(new OpenSshMux(std::move(child), *spawned, std::move(control_path)));
  std::string seen;
  while (seen.find(kMuxReadyLine) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p[2] = {{mux->stdout_.get(), POLLIN, 0}, {cancel_fd, POLLIN, 0}};
    if (left <= 0 || ::poll(p, 2, static_cast<int>(left)) <= 0 || p[1].revents) {
      spdlog::debug("{}: no OpenSSH tunnel master: not up in time", spec.host.alias);
      return nullptr;
    }
    char buf[256];
    const ssize_t n = ::read(mux->stdout_.get(), buf, sizeof buf);
    if (n <= 0) {
      auto status = mux->child_->wait_for(std::chrono::milliseconds(500));
      spdlog::debug("{}: no OpenSSH tunnel master: ssh {}", spec.host.alias,
                    status ? ChildProcess::describe_status(*status) : std::string("closed its output"));
      return nullptr;
    }
    seen.append(buf, static_cast<std::size_t>(n));
  }
  return mux;
}

namespace {

// One byte carrying `fd`, as OpenSSH's mm_send_fd sends it (the master reads them one by one).
bool send_fd(int sock, int fd) {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  for (;;) {
    const ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n == 1) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

bool send_all(int sock, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(sock, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::expected<posix::UniqueFd, std::string> OpenSshMux::stdio_forward(int read_fd, int write_fd, std::string_view host, int port) {
  posix::UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock) return std::unexpected(std::string("socket: ") + std::strerror(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, control_path_.c_str(), control_path_.string().size());
  if (::connect(sock.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return std::unexpected(std::string("the master's socket: ") + std::strerror(errno));
  std::uint32_t id = 0;
  {
    std::lock_guard lk(mutex_);
    id = next_id_++;
  }
  // Hello and request at once: the master reads one whole packet at a time, so the bytes that
  // carry the descriptors are still unread when it asks for them.
  if (!send_all(sock.get(), mux::hello_packet() + mux::stdio_forward_packet(id, host, static_cast<std::uint32_t>(port))) ||
      !send_fd(sock.get(), read_fd) || !send_fd(sock.get(), write_fd))
    return std::unexpected(std::string("the master's socket: ") + std::strerror(errno));
  ::fcntl(sock.get(), F_SETFL, ::fcntl(sock.get(), F_GETFL) | O_NONBLOCK);
  return sock;
}

TunnelMaster::TunnelMaster(OpenSshLaneSpec spec, std::string key_type, std::unique_ptr<LaneKnownHosts> dir)
    : spec_(std::move(spec)), key_type_(std::move(key_type)), dir_(std::move(dir)) {
  if (int p[2]; ::pipe2(p, O_CLOEXEC) == 0) {
    cancel_read_.reset(p[0]);
    cancel_write_.reset(p[1]);
  }
}

void TunnelMaster::start() {
  std::lock_guard lk(mutex_);
  if (starter_.joinable() || settled_) return;
  starter_ = std::thread([this] {
    auto up = OpenSshMux::start(spec_, key_type_, dir_->dir() / "mux", Clock::now() + std::chrono::seconds(15), cancel_read_.get());
    spdlog::debug("{}: OpenSSH tunnel master {}", spec_.host.alias, up ? "up" : "did not start; tunnels use the link");
    std::lock_guard lk2(mutex_);
    mux_ = std::move(up);
    settled_ = true;
    settled_cv_.notify_all();
  });
}

TunnelMaster::~TunnelMaster() {
  cancel_write_.reset();  // EOF: a start still waiting gives up
  std::thread starter;
  {
    std::lock_guard lk(mutex_);
    starter = std::move(starter_);
  }
  if (starter.joinable()) starter.join();
  std::shared_ptr<OpenSshMux> held;
  {
    std::lock_guard lk(mutex_);
    held = std::move(mux_);
  }
  held.reset();  // before dir_ goes: the master's socket is in it
}

std::shared_ptr<OpenSshMux> TunnelMaster::mux() {
  std::lock_guard lk(mutex_);
  if (mux_ && !mux_->running()) {
    spdlog::debug("OpenSSH tunnel master exited; tunnels use the link");
    mux_.reset();
  }
  return mux_;
}

bool TunnelMaster::wait_up(Clock::time_point deadline) {
  start();
  {
    std::unique_lock lk(mutex_);
    settled_cv_.wait_until(lk, deadline, [this] { return settled_; });
  }
  return mux() != nullptr;
}

}  // namespace ferry::remote

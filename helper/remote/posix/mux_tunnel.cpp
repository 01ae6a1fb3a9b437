// A local tunnel's connections through the OpenSSH tunnel master: see mux_tunnel.hpp.
#include "helper/remote/mux_tunnel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace ferry::remote {

namespace {
constexpr int kPipeBytes = 1 << 20;  // one wake per MiB of download, not per 64 KiB
constexpr std::size_t kSpliceBytes = 1 << 20;
}  // namespace

struct MuxTunnel::Conn {
  posix::UniqueFd sock;     // ours; the master reads a descriptor of its own for the same socket
  posix::UniqueFd down;     // the pipe the master writes the download into
  posix::UniqueFd control;  // the master's answer, then EOF when the session ends
  std::shared_ptr<ssh::ForwardCounters> counters;
  std::string replies;
  bool socket_full = false;  // the last splice left bytes in the pipe: wait for the socket
  bool done() const { return !down && !control; }

  // Moves what the pipe holds into the socket until one of them would block.
  void pump() {
    for (;;) {
      const ssize_t n = ::splice(down.get(), nullptr, sock.get(), nullptr, kSpliceBytes, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) continue;
      if (n == 0) {  // the remote side ended: the local peer reads EOF, and may still write
        ::shutdown(sock.get(), SHUT_WR);
        down.reset();
        return;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        int pending = 0;
        socket_full = ::ioctl(down.get(), FIONREAD, &pending) == 0 && pending > 0;
        return;
      }
      down.reset();  // the local peer is gone: the master's next write fails and ends the channel
      return;
    }
  }

  // The master's hello and its answer; EOF once the session is over.
  void read_control(const std::string& where) {
    char buf[512];
    bool ended = false;
    for (;;) {
      const ssize_t n = ::read(control.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      if (n <= 0) {
        ended = true;
        break;
      }
      replies.append(buf, static_cast<std::size_t>(n));
    }
    for (;;) {  // what came before an EOF (a refusal, then the close) is read first
      auto m = mux::take_message(replies);
      if (!m) {
        spdlog::warn("tunnel to {}: OpenSSH master: {}", where, m.error());
        control.reset();  // ends the session
        return;
      }
      if (!*m) break;
      if ((*m)->type == mux::kFailure || (*m)->type == mux::kPermissionDenied) {
        ++counters->failed;
        spdlog::warn("ssh: forwarded connection to {} refused: {}", where, (*m)->reason);
      }
    }
    if (ended) control.reset();
  }
};

MuxTunnel::MuxTunnel(std::shared_ptr<TunnelMaster> master, std::string host, int port, std::uint64_t after_bytes)
    : master_(std::move(master)),
      host_(std::move(host)),
      port_(port),
      after_bytes_(after_bytes),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (after_bytes_ == 0) master_->start();
  thread_ = std::thread([this] { loop(); });
}

MuxTunnel::~MuxTunnel() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void MuxTunnel::wake() {
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof one);
}

void MuxTunnel::stop() {
  {
    std::lock_guard lk(mutex_);
    stopping_ = true;
  }
  wake();
}

bool MuxTunnel::take(net::NativeSocket fd, const std::shared_ptr<ssh::ForwardCounters>& counters) {
  {
    std::lock_guard lk(mutex_);
    if (stopping_) return false;
  }
  auto mux = master_->mux();
  if (!mux) {
    if (counters->bytes.load() >= after_bytes_) master_->start();  // for the connections after this one
    return false;
  }
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  auto c = std::make_unique<Conn>();
  c->down.reset(p[0]);
  posix::UniqueFd up_end(p[1]);
  ::fcntl(p[0], F_SETPIPE_SZ, kPipeBytes);
  // Non-blocking before the master sees it: the master then has no blocking mode to put back
  // when it is done, while this thread still splices into the same open file.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  auto control = mux->stdio_forward(fd, up_end.get(), host_, port_);
  if (!control) {
    spdlog::debug("tunnel to {}:{}: OpenSSH master: {}; over the link", host_, port_, control.error());
    return false;
  }
  c->sock.reset(fd);
  c->control = std::move(*control);
  c->counters = counters;
  ++counters->accepted;
  ++counters->live;
  ++counters->handed_off;
  {
    std::lock_guard lk(mutex_);
    incoming_.push_back(std::move(c));
  }
  wake();
  return true;
}

void MuxTunnel::loop() {
  std::vector<std::unique_ptr<Conn>> conns;
  const std::string where = host_ + ":" + std::to_string(port_);
  for (;;) {
    {
      std::lock_guard lk(mutex_);
      for (auto& c : incoming_) conns.push_back(std::move(c));
      incoming_.clear();
      if (stopping_) break;
    }
    std::vector<pollfd> fds{{wake_fd_.get(), POLLIN, 0}};
    for (const auto& c : conns) {
      fds.push_back({c->control.get(), POLLIN, 0});  // -1 once closed: poll skips it
      if (!c->down) fds.push_back({-1, 0, 0});
      else if (c->socket_full) fds.push_back({c->sock.get(), POLLOUT, 0});
      else fds.push_back({c->down.get(), POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) break;
    if (fds[0].revents) {
      std::uint64_t drained = 0;
      (void)!::read(wake_fd_.get(), &drained, sizeof drained);
    }
    for (std::size_t i = 0; i < conns.size(); ++i) {
      Conn& c = *conns[i];
      if (fds[1 + 2 * i].revents) c.read_control(where);
      if (fds[2 + 2 * i].revents && c.down) {
        c.socket_full = false;
        c.pump();
      }
    }
    std::erase_if(conns, [](const std::unique_ptr<Conn>& c) {
      if (!c->done()) return false;
      --c->counters->live;
      return true;
    });
  }
  // Stopped: closing a control socket ends its session in the master; the local peer is told now.
  for (auto& c : conns) {
    ::shutdown(c->sock.get(), SHUT_RDWR);
    --c->counters->live;
  }
}

}  // namespace ferry::remote

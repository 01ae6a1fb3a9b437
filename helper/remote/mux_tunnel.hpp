// One local tunnel's connections carried by the link's OpenSSH tunnel master (openssh_mux.hpp).
// The master reads each socket itself and writes what comes back into a pipe; one thread of the
// tunnel's splices each pipe into its socket (the kernel moves the pages: no copy in ferry) and
// turns the pipe's EOF into a half-close of the socket, which the master cannot do: it holds the
// socket under a descriptor of its own that it only closes. It also watches each control socket
// for the master's answer and for the session's end.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.hpp"
#include "helper/remote/openssh_mux.hpp"
#include "helper/ssh/port_forward.hpp"

namespace ferry::remote {

class MuxTunnel final : public ssh::ConnectionHandoff {
 public:
  // host:port as the box sees it; the master starts once the tunnel has moved `after_bytes`
  // over the link's channels (kOpenSshTunnelAfterBytes), at once when it is 0.
  MuxTunnel(std::shared_ptr<TunnelMaster> master, std::string host, int port, std::uint64_t after_bytes);
  ~MuxTunnel() override;  // ends every connection and joins the thread
  MuxTunnel(const MuxTunnel&) = delete;
  MuxTunnel& operator=(const MuxTunnel&) = delete;

  bool take(net::NativeSocket fd, const std::shared_ptr<ssh::ForwardCounters>& counters) override;
  void stop() override;

 private:
  struct Conn;
  void loop();
  void wake();

  std::shared_ptr<TunnelMaster> master_;
  std::string host_;
  int port_;
  std::uint64_t after_bytes_;
  posix::UniqueFd wake_fd_;  // eventfd: new connections, stop
  std::mutex mutex_;
  std::vector<std::unique_ptr<Conn>> incoming_;  // taken, not yet seen by the thread
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ferry::remote

// RunFollower: follows one run's output from an offset to its exit, across re-attaches and SSH
// reconnects, delivering each record exactly once and in log order. The owner drives it: it
// calls attach() when needs_attach() says so (at the start, after link_restored(), after a
// gap) and waits on wakeup() (with others) or wait() (threads) for the next event.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "common/wakeup.hpp"
#include "helper/run/run_client.hpp"

namespace ferry::run {

class RunFollower final : public RunWatcher {
 public:
  // Called on the endpoint's reader thread, in log order, once per record.
  using Sink = std::function<void(const OutputRecord&)>;

  RunFollower(RunClient& client, std::string id, std::uint64_t offset, Sink sink);
  ~RunFollower() override;
  RunFollower(const RunFollower&) = delete;
  RunFollower& operator=(const RunFollower&) = delete;

  // The ports the run's processes listen on, told to `sink` on the endpoint's reader thread (it
  // must not call the endpoint: a PortForwarder queues them). Before the first attach.
  void watch_ports(std::function<void(const PortEvent&)> sink) { port_sink_ = std::move(sink); }

  // run/attach at the next undelivered offset. An unavailable link leaves needs_attach() to the
  // next link_restored(); an unknown id or a bad offset is returned as it is (and failed()).
  std::expected<AttachReply, ResponseError> attach();
  // The run was attached by its start (RunClient::start with `attach`, from offset 0): what arrived
  // before this follower existed is delivered now, and, while that stream is still the link's
  // (`stream_live`: no drop since), no attach() is needed. After watch_ports().
  void adopt_start_attach(bool stream_live);

  // From the endpoint's state callback (SshEndpoint::on_state): the stream stops on a dropped
  // link and must be re-attached on the new one.
  void link_lost();
  void link_restored();
  // The link is gone for good (the live ferry a terminal rode went away): failed() says `why`.
  void fail(std::string why);

  bool needs_attach() const;
  bool link_down() const;
  // The run ended and every record up to its logBytes was delivered.
  bool finished() const;
  std::optional<RunExit> exit() const;
  // Set when following cannot go on (the agent keeps skipping output, the run is unknown).
  std::optional<std::string> failed() const;
  std::uint64_t next_offset() const;
  std::uint64_t delivered_bytes() const;
  const std::string& id() const { return id_; }

  // Raised when something changed (wait on it with others: platform::wait_any, or poll its
  // waitable on POSIX); drain() lowers it.
  platform::Wakeup& wakeup() { return wake_; }
  platform::NativeWaitable wake_fd() const { return wake_.waitable(); }
  void drain();

  enum class Event { finished, needs_attach, failed, timeout };
  // Blocks until one of the events holds or the deadline passes.
  Event wait(std::chrono::steady_clock::time_point deadline);

  // RunWatcher.
  void on_output(const OutputRecord& record) override;
  void on_exited(const RunExit& exit) override;
  void on_port(const PortEvent& event) override;

 private:
  void wake_locked();

  RunClient& client_;
  std::string id_;
  Sink sink_;
  std::function<void(const PortEvent&)> port_sink_;
  platform::Wakeup wake_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  OutputCursor cursor_;
  std::optional<RunExit> exit_;
  std::optional<std::string> failed_;
  bool needs_attach_ = true;
  bool link_down_ = false;
  unsigned generation_ = 0;      // bumped by link_restored()
  int attaches_without_progress_ = 0;
  std::uint64_t next_at_last_attach_ = 0;
};

}  // namespace ferry::run

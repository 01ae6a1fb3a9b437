// Runs for the editor: start them on the project's link, follow their output (one follower
// thread per followed run, re-attaching at the next offset after a reconnect) and hand it to a
// sink: run/output + run/exited notifications for ferry's clients, a log file and messages for
// plain LSP clients (run_log.hpp). The ports a followed run listens on forward themselves
// (port_announcer.hpp).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "helper/run/port_forwarder.hpp"
#include "helper/run/run_follower.hpp"
#include "helper/server/port_announcer.hpp"
#include "helper/server/server_context.hpp"
#include "helper/server/server_progress.hpp"
#include "protocol/messages.hpp"

namespace ferry::server {

using protocol::RunStartParams;

// Where a followed run's output and end go; called on its follower's threads.
struct RunSink {
  std::function<void(const run::OutputRecord& record)> output;
  std::function<void(const protocol::json& exited)> exited;  // run/exited's params (protocol::RunExitedParams)
};

// run/output's params: `text` when the bytes are valid UTF-8, else `base64`.
protocol::json output_notification(const run::OutputRecord& record);

class RunService {
 public:
  // `progress`: where a Slurm job's wait is shown (none: only in its output).
  explicit RunService(const ServerContext& ctx, ServerProgress* progress = nullptr) : ctx_(ctx), progress_(progress) {}
  ~RunService();

  // Starts and follows; an empty sink sends run/output and run/exited.
  std::expected<protocol::RunStartResult, protocol::ResponseError> start(const RunStartParams& params, RunSink sink = {});
  // Follows `id` from `offset` (again, if followed already); an empty sink keeps the one it had.
  // `project`: where a run not followed yet lives (none: the workspace project).
  std::expected<protocol::RunAttachResult, protocol::ResponseError> attach(const std::string& id, std::uint64_t offset,
                                                                           RunSink sink = {},
                                                                           const std::optional<std::string>& project = {});
  std::expected<protocol::EmptyResult, protocol::ResponseError> detach(const std::string& id);
  std::expected<protocol::EmptyResult, protocol::ResponseError> input(const std::string& id, const std::string& data,
                                                                      bool eof);
  std::expected<protocol::EmptyResult, protocol::ResponseError> signal(const std::string& id, const std::string& signal,
                                                                       const std::optional<std::string>& project = {});
  std::expected<protocol::EmptyResult, protocol::ResponseError> resize(const std::string& id, int cols, int rows);
  std::expected<protocol::RunListResult, protocol::ResponseError> list(const std::optional<std::string>& project, bool all);
  // The runs this server follows that have not ended, newest last (ferry.stop).
  std::vector<std::string> running() const;

 private:
  struct Followed {
    ProjectLinkPtr link;
    // Ports the run listens on, forwarded and offered in the browser; before the follower, so they
    // go after it (no port event reaches them once they are gone).
    std::unique_ptr<PortAnnouncer> announcer;
    std::unique_ptr<run::PortForwarder> ports;
    std::unique_ptr<run::RunFollower> follower;
    remote::Subscription states;
    std::thread thread;
    std::atomic<bool> stop{false}, down{false}, ended{false};
    RunSink sink;
  };
  // `what`: the run as the person knows it ("main.py"), for the messages about its ports.
  // `attached_at_start`: the start opened the stream (RunClient::start's `attach`); the follower
  // adopts it instead of attaching.
  void follow_locked(const ProjectLinkPtr& link, const std::string& id, std::uint64_t offset, RunSink sink,
                     bool slurm_job = false, const std::string& what = "", bool attached_at_start = false);
  void forward_ports(Followed& f, const std::string& id, const std::string& what);
  void follow_loop(Followed& f);
  static void stop(Followed& f);
  // The link a run id is served by: the one following it, else `project`'s (the workspace's).
  std::expected<ProjectLinkPtr, protocol::ResponseError> link_for(const std::string& id,
                                                                  const std::optional<std::string>& project = {});

  const ServerContext& ctx_;
  ServerProgress* progress_ = nullptr;
  mutable std::mutex mutex_;  // guards followed_ and order_
  std::map<std::string, std::shared_ptr<Followed>> followed_;
  std::vector<std::string> order_;
};

}  // namespace ferry::server

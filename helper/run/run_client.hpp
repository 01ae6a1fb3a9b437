// RunClient: the agent's run/* methods (see docs/runs.md, "agent wire") over any
// remote::Endpoint, typed, plus routing of run/output, run/exited and run/port notifications to whoever
// watches a run id. Any number of clients (and other subscribers) can share one endpoint.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "helper/remote/endpoint.hpp"
#include "helper/run/launch_spec.hpp"
#include "helper/run/output_cursor.hpp"
#include "helper/run/run_exit.hpp"

namespace ferry::run {

using protocol::ResponseError;

struct AttachReply {
  std::string id;
  std::uint64_t offset = 0;
  std::string state;  // "running" | "exited"
};

struct StartedRun {
  std::string id;
  long long pid = 0;
  std::string started_at;
  // Set when start() asked to attach and the agent did: the stream is open from offset 0, and
  // its notifications wait for claim().
  std::optional<AttachReply> attached;
};

// One entry of run/list.
struct RunInfo {
  std::string id;
  std::vector<std::string> argv;
  std::string cwd;
  std::string root;
  std::string state;  // "running" | "exited" | "lost"
  long long pid = 0;
  std::string started_at;
  std::string ended_at;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::uint64_t log_bytes = 0;
  std::string group;  // runs started together (the ranks of one `ferry train --hosts`), "" alone
  std::string label;  // this run within its group ("rank 1 of 2 on gpu2")
  std::string slurm_job;  // the Slurm job the run is (a cluster's login node), "" for a plain run
  std::optional<protocol::SlurmJobState> slurm_state;  // where it stands, as the run's follower last saw it
  // Running runs: whether a live ferry streams it (nullopt from an agent that does not say). A
  // running run nobody follows was started --detach, or its ferry was killed.
  std::optional<bool> followed;
};
std::expected<RunInfo, std::string> parse_run_info(const json& entry);

// A port a followed run's processes began or stopped listening on (run/port, asked for with
// attach's `ports`).
struct PortEvent {
  std::string run_id;
  int port = 0;
  std::string address;  // as bound on the box: "0.0.0.0", "127.0.0.1", "::"
  bool open = true;
};
std::optional<PortEvent> parse_port_event(const json& params);

// Receives one run's notifications, on the endpoint's reader thread (never call the endpoint
// from there: its replies are read by that very thread).
class RunWatcher {
 public:
  virtual ~RunWatcher() = default;
  virtual void on_output(const OutputRecord& record) = 0;
  virtual void on_exited(const RunExit& exit) = 0;
  virtual void on_port(const PortEvent&) {}
};

class RunClient {
 public:
  // Subscribes to `endpoint`'s notifications; those other than run/* go to `others` (may be
  // empty).
  explicit RunClient(remote::Endpoint& endpoint, remote::NotificationHandler others = {});
  ~RunClient();
  RunClient(const RunClient&) = delete;
  RunClient& operator=(const RunClient&) = delete;

  // With `attach` (its value: whether run/port events are wanted too), the agent streams the new
  // run from offset 0 at once: one round trip fewer before its first byte. Its notifications that
  // come before anyone watches the id are held for claim().
  std::expected<StartedRun, ResponseError> start(const RunSpec& spec, std::optional<bool> attach = std::nullopt);
  // `ports`: the agent also says which ports the run's processes listen on (run/port).
  std::expected<AttachReply, ResponseError> attach(const std::string& id, std::uint64_t offset, bool ports = false);
  std::expected<void, ResponseError> detach(const std::string& id);
  std::expected<void, ResponseError> input(const std::string& id, std::string_view data, bool eof = false);
  // signal: a name ("INT") or a number as text. `kill_on_disconnect`: should this link end before
  // the run does without a detach (ferry killed, as an IDE's second Stop does), the agent sends
  // the run SIGKILL.
  std::expected<void, ResponseError> signal(const std::string& id, const std::string& signal,
                                            bool kill_on_disconnect = false);
  std::expected<void, ResponseError> resize(const std::string& id, int cols, int rows);
  // `running`: only runs still running (cheap on a box with a long history).
  std::expected<std::vector<RunInfo>, ResponseError> list(bool all = false, bool running = false);
  std::expected<ReadResult, ResponseError> read(const std::string& id, std::uint64_t offset,
                                                std::uint64_t max_bytes = 1 << 20);
  std::expected<void, ResponseError> remove(const std::string& id);

  // Watchers for an id; after unwatch() returns, the watcher gets no more calls.
  void watch(const std::string& id, RunWatcher* watcher);
  void unwatch(const std::string& id, RunWatcher* watcher);
  // For a run start() attached: hands `watcher` (already watching the id) what was held for it, in
  // order, and holds no more. A null `watcher` lets the held notifications go (nobody will follow).
  void claim(const std::string& id, RunWatcher* watcher);

  remote::Endpoint& endpoint() { return endpoint_; }

 private:
  struct Router;
  remote::Endpoint& endpoint_;
  std::shared_ptr<Router> router_;
  remote::Subscription subscription_;  // last: unsubscribed before the router goes
};

// A clear message for the common failures of a call about one run.
bool is_unknown_run(const ResponseError& error);

}  // namespace ferry::run

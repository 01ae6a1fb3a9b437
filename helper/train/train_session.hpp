// One `ferry train` run, shared by the CLI and `ferry serve`'s train/start: push the mapping,
// start ferry-train CONFIG as a run through the agent (so it survives a dropped link), follow its
// output with exact re-attach, hand out its events, and pull the outputs back once it ends.
#pragma once

#include <expected>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/wakeup.hpp"
#include "helper/remote/endpoint.hpp"
#include "protocol/slurm_job.hpp"
#include "helper/run/run_client.hpp"
#include "helper/run/run_follower.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/train/train_event.hpp"
#include "helper/train/train_launch.hpp"
#include "helper/train/trainer_install.hpp"
#include "protocol/error.hpp"

namespace ferry::training {

struct TrainRequest {
  std::filesystem::path config;            // the local config file, inside the mapping
  bool resume = false;
  bool sync = true;                        // push the mapping before starting
  std::string binary;                      // ferry-train on the box; "" = the default for the host:
                                           // on an SSH box the one ferry builds there (trainer_install)
  std::string interpreter = "python3";     // ferry.json's: whose torch the box's trainer is built with
  bool local_host = false;                 // the `local` host: ferry-train is the one built with ferry
  std::map<std::string, std::string> env;  // ferry.json env
  std::optional<protocol::SlurmJobOptions> slurm;  // ferry.json's `slurm`: the training is a Slurm job
  // Or a step of this running allocation (`ferry alloc`), over slurm->nodes of its nodes.
  std::string allocation;
};

// Called on the endpoint's reader thread, in output order.
struct TrainSinks {
  std::function<void(const TrainEvent& event, std::string_view line)> on_event;
  std::function<void(std::string_view line)> on_other_stdout;  // stdout lines that are not events
  std::function<void(std::string_view bytes)> on_stderr;
  // The trainer's build on the box, when start() has to build it (on start()'s thread).
  std::function<void(const BuildProgressParser& build)> on_build;
};

struct PulledOutputs {
  std::vector<std::filesystem::path> files;  // local paths now holding the remote outputs
  std::vector<std::string> notes;            // what was not pulled, and why
};

// How a session pushes before it starts and pulls the outputs after: its engine's own push and
// pull unless these are set (a terminal riding the project's live ferry has that process push and
// pull, on its warm index and the lock it holds).
struct TrainSync {
  std::function<std::expected<sync::SyncSummary, Error>()> push;
  std::function<std::expected<sync::SyncSummary, Error>(const std::vector<std::string>& paths)> pull;  // forced
};

class TrainSession {
 public:
  TrainSession(remote::Endpoint& endpoint, sync::SyncEngine& engine, TrainSinks sinks);
  void sync_through(TrainSync sync) { sync_ = std::move(sync); }
  ~TrainSession();
  TrainSession(const TrainSession&) = delete;
  TrainSession& operator=(const TrainSession&) = delete;

  // Pushes (unless request.sync is false), then run/start. Returns the run id; errors say how
  // to fix them (ferry-train missing on the box, config outside the mapping, ...) and carry
  // their kind: invalid_input for the config and the trainer's whereabouts, the push's or the
  // agent's own (agent_lost when the link went away), io for a trainer build that failed.
  std::expected<std::string, Error> start(const TrainRequest& request);
  const std::optional<sync::SyncSummary>& sync_summary() const { return sync_summary_; }
  const TrainLaunch& launch() const { return launch_; }
  // The box's trainer as start() found or built it (not set for --trainer or the local host).
  const std::optional<TrainerInstall>& trainer() const { return trainer_; }
  const std::string& run_id() const { return run_id_; }

  // Follows the run to its exit. When `interrupt` (none: null) is raised, it is lowered and
  // `on_interrupt` runs on this thread (it may call signal()); if `abandon` then says true,
  // following stops (the run goes on) with a cancelled error. A local agent that died is
  // agent_lost; an agent that refuses the stream (an unknown id, a log it cannot send) io.
  std::expected<run::RunExit, Error> follow(platform::Wakeup* interrupt = nullptr, const std::function<void()>& on_interrupt = {},
                                            const std::function<bool()>& abandon = {});
  // `kill_on_disconnect`: see RunClient::signal.
  std::expected<void, Error> signal(const std::string& name, bool kill_on_disconnect = false);

  // SshEndpoint's on_state: the stream stops with the link and is re-attached on the new one.
  void link_lost();
  void link_restored();

  // After follow(): output_dir's plot.svg, metrics.csv, events.jsonl and the newest checkpoint.
  PulledOutputs pull_outputs();
  bool saw_done() const;
  std::optional<std::string> last_checkpoint() const;

 private:
  void on_record(const run::OutputRecord& record);

  remote::Endpoint& endpoint_;
  sync::SyncEngine& engine_;
  TrainSync sync_;
  TrainSinks sinks_;
  std::optional<sync::SyncSummary> sync_summary_;
  TrainLaunch launch_;
  std::optional<TrainerInstall> trainer_;
  nlohmann::json config_;
  std::string run_id_;
  bool local_host_ = false;
  std::unique_ptr<run::RunClient> client_;
  std::unique_ptr<run::RunFollower> follower_;

  mutable std::mutex mu_;
  LineSplitter stdout_lines_;  // reader thread only
  bool done_ = false;
  std::optional<std::string> checkpoint_;
};

}  // namespace ferry::training

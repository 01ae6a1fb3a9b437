// A Slurm job's wait as the editor's progress: the follower's "ferry: job N pending (REASON)" lines
// on the run's stderr begin and update a server-made $/progress ("Slurm job 12: pending
// (Resources)"), its "running on NODES" line or the run's end ends it. The output itself still
// goes to the editor as it came.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "helper/run/output_cursor.hpp"
#include "helper/server/server_progress.hpp"

namespace ferry::server {

class SlurmWaitProgress {
 public:
  explicit SlurmWaitProgress(ServerProgress& progress) : progress_(progress) {}
  ~SlurmWaitProgress() { finish(); }

  // Each output record of the run, on its follower's thread.
  void see(const run::OutputRecord& record);
  // The run ended (or is no longer followed).
  void finish();

 private:
  void line(std::string_view text);

  ServerProgress& progress_;
  std::mutex mutex_;
  std::string partial_;  // stderr's last line until its newline comes
  std::unique_ptr<ServerProgress::Work> work_;
  bool done_ = false;
};

}  // namespace ferry::server

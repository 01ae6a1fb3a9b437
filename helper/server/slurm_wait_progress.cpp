// SlurmWaitProgress: see slurm_wait_progress.hpp.
#include "helper/server/slurm_wait_progress.hpp"

#include "protocol/slurm_job.hpp"

namespace ferry::server {

void SlurmWaitProgress::see(const run::OutputRecord& record) {
  if (record.stream != run::Stream::stderr_stream) return;
  std::lock_guard lock(mutex_);
  if (done_) return;
  partial_ += record.data;
  for (auto nl = partial_.find('\n'); nl != std::string::npos && !done_; nl = partial_.find('\n')) {
    line(std::string_view(partial_).substr(0, nl));
    partial_.erase(0, nl + 1);
  }
  if (partial_.size() > 4096) partial_.clear();  // a program's own long line: not ours
}

// Under mutex_.
void SlurmWaitProgress::line(std::string_view text) {
  auto wait = protocol::parse_slurm_wait_line(text);
  if (!wait) return;
  const std::string title = "Slurm job " + wait->job_id;
  if (wait->running) {
    if (work_) work_->progress().end("running on " + wait->detail);
    work_.reset();
    done_ = true;  // once it runs, the wait is over for good
    return;
  }
  const std::string words = protocol::pending_words(wait->detail, wait->ahead);
  if (!work_) {
    work_ = progress_.begin(nullptr);
    if (work_) work_->progress().begin(title, words);
  } else {
    work_->progress().report(words);
  }
}

void SlurmWaitProgress::finish() {
  std::lock_guard lock(mutex_);
  if (work_) work_->progress().end();
  work_.reset();
  done_ = true;
}

}  // namespace ferry::server

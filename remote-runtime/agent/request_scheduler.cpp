// The agent's request scheduler: see request_scheduler.hpp.
#include "remote-runtime/agent/request_scheduler.hpp"

#include <spdlog/spdlog.h>

namespace ferry::agent {

RequestScheduler::RequestScheduler(unsigned workers, std::size_t max_queued, Classify classify)
    : classify_(std::move(classify)), max_queued_(max_queued) {
  for (unsigned i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

RequestScheduler::~RequestScheduler() {
  drain();
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void RequestScheduler::mark_failed() {
  std::lock_guard lock(mu_);
  failed_ = true;
}

bool RequestScheduler::failed() const {
  std::lock_guard lock(mu_);
  return failed_;
}

void RequestScheduler::run(Task& task, const std::string& method) {
  // A request read before the helper went away (its frames were still in the pipe) is dropped:
  // no one can learn its answer, and a write landing after the helper reconnected would look
  // like someone else's change to the push that follows.
  if (!failed() && link_alive_ && !link_alive_()) mark_failed();
  if (failed()) {
    spdlog::debug("request {} dropped: its reply has nowhere to go", method);
    Task dropped = std::move(task);  // destroyed here, on this thread: its reply is -32603, unwritable anyway
    return;
  }
  spdlog::debug("request {} begins", method);
  task();
  spdlog::debug("request {} done", method);
}

void RequestScheduler::wait_for(const std::string* key) {
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] {
    if (!key) return outstanding_ == 0;
    auto it = by_key_.find(*key);
    return it == by_key_.end();
  });
}

void RequestScheduler::drain() { wait_for(nullptr); }

void RequestScheduler::schedule(const std::string& method, const protocol::json& params, Task task) {
  const RequestLane lane = workers_.empty() ? RequestLane{} : classify_(method, params);
  switch (lane.kind) {
    case RequestLane::parallel: {
      std::unique_lock lock(mu_);
      done_cv_.wait(lock, [&] { return queue_.size() < max_queued_; });
      ++outstanding_;
      ++by_key_[lane.key];
      queue_.push_back(Job{std::move(task), lane.key, method});
      lock.unlock();
      work_cv_.notify_one();
      return;
    }
    case RequestLane::barrier:
      drain();
      break;
    case RequestLane::inline_now:
      if (!lane.key.empty()) wait_for(&lane.key);
      break;
  }
  run(task, method);
}

void RequestScheduler::worker_loop() {
  std::unique_lock lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, and nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    done_cv_.notify_all();  // room in the queue for a blocked schedule()
    lock.unlock();
    run(job.task, job.method);
    job.task = nullptr;  // a dropped task answers as it is destroyed: before the job counts as done
    lock.lock();
    --outstanding_;
    if (auto it = by_key_.find(job.key); it != by_key_.end() && --it->second == 0) by_key_.erase(it);
    done_cv_.notify_all();
  }
}

}  // namespace ferry::agent

// The agent's request scheduler: see request_scheduler.hpp.
#include "remote-runtime/agent/request_scheduler.hpp"

#include <variant>

#include <spdlog/spdlog.h>

namespace ferry::agent {

RequestScheduler::RequestScheduler(unsigned workers, std::size_t max_queued, Handler handler, Reply reply,
                                   Classify classify)
    : handler_(std::move(handler)), reply_(std::move(reply)), classify_(std::move(classify)), max_queued_(max_queued) {
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

bool RequestScheduler::failed() const {
  std::lock_guard lock(mu_);
  return failed_;
}

void RequestScheduler::run(const protocol::Message& message) {
  const auto* request = std::get_if<protocol::Request>(&message);
  // A request read before the helper went away (its frames were still in the pipe) is dropped:
  // no one can learn its answer, and a write landing after the helper reconnected would look
  // like someone else's change to the push that follows.
  if (request && failed()) {
    spdlog::debug("request {} dropped: its reply has nowhere to go", request->method);
    return;
  }
  if (request) spdlog::debug("request {} begins", request->method);
  auto reply = handler_(message);
  if (request) spdlog::debug("request {} done", request->method);
  if (reply && !reply_(*reply)) {
    std::lock_guard lock(mu_);
    failed_ = true;
  }
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

void RequestScheduler::submit(protocol::Message message) {
  const auto* request = std::get_if<protocol::Request>(&message);
  const RequestLane lane = request && !workers_.empty() ? classify_(*request) : RequestLane{};
  switch (lane.kind) {
    case RequestLane::parallel: {
      std::unique_lock lock(mu_);
      done_cv_.wait(lock, [&] { return queue_.size() < max_queued_; });
      ++outstanding_;
      ++by_key_[lane.key];
      queue_.push_back(Job{std::move(message), lane.key});
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
  run(message);
}

void RequestScheduler::worker_loop() {
  std::unique_lock lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, and nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    done_cv_.notify_all();  // room in the queue for a blocked submit
    lock.unlock();
    run(job.message);
    lock.lock();
    --outstanding_;
    if (auto it = by_key_.find(job.key); it != by_key_.end() && --it->second == 0) by_key_.erase(it);
    done_cv_.notify_all();
  }
}

}  // namespace ferry::agent

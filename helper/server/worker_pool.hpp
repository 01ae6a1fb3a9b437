// A fixed pool of worker threads for handlers that may block (connects, syncs, sleeps), so the
// reading thread stays free to see $/cancelRequest. stop() drains the queue and joins: no
// task is ever dropped or left running detached.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ferry::server {

class WorkerPool {
 public:
  explicit WorkerPool(std::size_t threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a task. After stop() it runs on the caller instead, so it still completes.
  void post(std::function<void()> task);
  // Runs every queued task, then joins the threads. Idempotent.
  void stop();

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ferry::server

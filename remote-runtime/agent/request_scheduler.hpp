// Runs the agent's requests, as protocol::Dispatcher's `schedule` hook: most on the reader
// thread in arrival order, the ones a classifier marks independent (sync writes) on a few worker
// threads, each answered when it is done, so replies may come out of order (the helper matches
// them by id). Ordering rules are the classifier's (see sync_methods.hpp's
// classify_sync_request for the sync ones):
//   inline    runs on the reader thread now; with a key, only after every earlier parallel
//             request with that key has finished (e.g. a file's commit after its appends)
//   parallel  queued for a worker; may overlap other parallel requests and inline ones
//   barrier   runs on the reader thread after every earlier parallel request has finished
//             (whole-tree readers and deletes, shutdown)
// Tasks are opaque (the dispatcher's closures run the handler and write the reply); the
// transport tells the scheduler when a reply could not be written (mark_failed), or answers its
// link probe that the reader of the replies is gone, and from then on no task that has not begun
// runs.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "protocol/jsonrpc.hpp"

namespace ferry::agent {

struct RequestLane {
  enum Kind { inline_now, parallel, barrier } kind = inline_now;
  std::string key;  // parallel: what later inline requests may wait for; inline: what to wait for
};

class RequestScheduler {
 public:
  using Task = std::function<void()>;
  using Classify = std::function<RequestLane(const std::string& method, const protocol::json& params)>;

  // `max_queued`: parallel requests waiting for a worker beyond which schedule() blocks the
  // reader, so a flood of big frames cannot pile up in memory.
  RequestScheduler(unsigned workers, std::size_t max_queued, Classify classify);
  ~RequestScheduler();  // finishes every queued task, then joins the workers
  RequestScheduler(const RequestScheduler&) = delete;
  RequestScheduler& operator=(const RequestScheduler&) = delete;

  // Called by the reader thread only, in arrival order (the Dispatcher's `schedule` hook).
  // `params` are read only during the call.
  void schedule(const std::string& method, const protocol::json& params, Task task);
  // Waits until no parallel task is queued or running.
  void drain();
  // A reply could not be written (the wire is gone): every task not yet begun is dropped
  // unrun. Thread-safe.
  void mark_failed();
  bool failed() const;
  // Asked before each task begins (false: the wire is gone, as if a reply had failed). The
  // reader may be blocked behind a full queue and not see the EOF while workers would still
  // begin what it had queued. Set before the first schedule().
  void set_link_probe(std::function<bool()> alive) { link_alive_ = std::move(alive); }

 private:
  struct Job {
    Task task;
    std::string key;
    std::string method;  // for the log
  };
  void worker_loop();
  void run(Task& task, const std::string& method);
  void wait_for(const std::string* key);

  Classify classify_;
  std::size_t max_queued_;
  std::function<bool()> link_alive_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // workers: a job or stop
  std::condition_variable done_cv_;  // reader: a job finished
  std::deque<Job> queue_;
  std::size_t outstanding_ = 0;                 // queued + running
  std::map<std::string, std::size_t> by_key_;  // the same, per key
  bool stop_ = false;
  bool failed_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ferry::agent

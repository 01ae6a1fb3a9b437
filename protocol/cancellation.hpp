// Cancellation for in-flight requests: $/cancelRequest flips a source, handlers poll or wait
// on its token. Waiting is on a condition variable, so a cancelled handler wakes at once
// rather than at its next poll.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace ferry::protocol {

class CancellationToken {
 public:
  CancellationToken();  // never cancelled; waits run to their timeout

  bool cancelled() const;
  // Waits up to `timeout`; true when cancelled (at once or during the wait).
  bool wait_for(std::chrono::steady_clock::duration timeout) const;

 private:
  friend class CancellationSource;
  struct State {
    std::mutex mutex;
    std::condition_variable cv;
    bool cancelled = false;
  };
  explicit CancellationToken(std::shared_ptr<State> s) : state_(std::move(s)) {}
  std::shared_ptr<State> state_;
};

class CancellationSource {
 public:
  CancellationSource() : state_(std::make_shared<CancellationToken::State>()) {}
  void cancel();
  bool cancelled() const;
  CancellationToken token() const { return CancellationToken(state_); }

 private:
  std::shared_ptr<CancellationToken::State> state_;
};

}  // namespace ferry::protocol

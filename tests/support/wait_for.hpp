// Waiting on conditions with a deadline instead of fixed sleeps.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace ferry::test {

// Re-checks `condition` (something another process changes, e.g. a file or a listing) until it
// holds or `limit` passes, checking every millisecond. True when it held.
template <class F>
bool eventually(F condition, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Waits on `cv` (notified by the producer under `mutex`) until `condition` holds or `limit` passes.
template <class F>
bool wait_on(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, F condition,
             std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
  return cv.wait_for(lock, limit, condition);
}

}  // namespace ferry::test

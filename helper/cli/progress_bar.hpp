// The terminal progress bar of ferry sync / pull / watch on stderr: percentage, bytes, rate and
// ETA, redrawn at most 10 times a second, drawn only when the stream is a terminal (a pipe or a
// log file gets nothing), and erased before the summary line is printed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace ferry::cli {

class ProgressBar {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kRedrawEvery{100};

  // Draws on `fd` only when it is a terminal, or always with `force` (tests). `now` is the clock.
  explicit ProgressBar(std::string verb, int fd = 2, bool force = false,
                       std::function<Clock::time_point()> now = [] { return Clock::now(); });
  ~ProgressBar();  // clears what it drew
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  bool enabled() const { return enabled_; }
  // Thread-safe (the engine reports from its workers). Redraws when 100 ms have passed since the
  // last drawing, and always for the first report and the last (done == total).
  void update(std::uint64_t done, std::uint64_t total);
  // A line of text in the bar's place ("sync  listing the remote: 120000 entries"), for a phase
  // with no known total; the same redraw limit, erased the same way.
  void status(std::string_view text);
  // Erases the bar's line, so the next line printed starts clean.
  void clear();
  int redraws() const;

  // One line of `width` columns at most (no newline, no escape codes):
  // "sync  42% [########..........] 12.3 MiB / 40.0 MiB  5.1 MiB/s  ETA 0:05".
  static std::string render(std::string_view verb, std::uint64_t done, std::uint64_t total, double bytes_per_second,
                            int width);

 private:
  std::string verb_;
  int fd_;
  bool enabled_;
  std::function<Clock::time_point()> now_;
  mutable std::mutex mu_;
  bool drawn_ = false;
  bool started_ = false;
  Clock::time_point start_{}, last_draw_{};
  int redraws_ = 0;
};

// For SyncOptions::progress: the bar's update, or an empty function when it is not drawn.
std::function<void(std::uint64_t, std::uint64_t)> progress_callback(const std::shared_ptr<ProgressBar>& bar);
// For SyncOptions::listing_progress: "listing the remote: N entries" in the bar's place, or an
// empty function when it is not drawn.
std::function<void(std::uint64_t)> listing_callback(const std::shared_ptr<ProgressBar>& bar);

}  // namespace ferry::cli

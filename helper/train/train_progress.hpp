// What `ferry train` shows on a terminal while ferry-train runs: one progress bar (step of total,
// loss, samples/s, ETA from the steps done since `start`), and a line for each event a person
// should keep (eval, checkpoint, advice, interrupted, done, error). Pure: no I/O, no clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "helper/train/train_event.hpp"

namespace ferry::training {

class TrainProgress {
 public:
  // Takes one event; returns the lines to leave on the terminal above the bar (maybe none).
  std::vector<std::string> on_event(const TrainEvent& event);

  // The bar for the latest state, at most `width` columns; empty before `start`.
  std::string bar(std::size_t width = 100) const;

  // Seconds left at the rate since `start` (event times); none until a step has been timed.
  std::optional<double> eta_seconds() const;
  bool started() const { return started_; }
  std::int64_t step() const { return step_; }
  std::int64_t total_steps() const { return total_; }
  std::optional<double> loss() const { return loss_; }
  std::optional<double> samples_per_s() const { return samples_per_s_; }

 private:
  bool started_ = false;
  std::int64_t start_step_ = 0;
  std::int64_t step_ = 0;
  std::int64_t total_ = 0;
  double start_time_ = 0;
  double last_time_ = 0;
  std::optional<double> loss_;
  std::optional<double> samples_per_s_;
};

// 7 -> "0:07", 754 -> "12:34", 3723 -> "1:02:03".
std::string format_duration(double seconds);
// 51628.2 -> "51.6k", 1.2e6 -> "1.20M", 812.4 -> "812".
std::string format_rate(double per_second);

}  // namespace ferry::training

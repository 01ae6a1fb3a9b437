// The data-starvation rule: when the accelerator waits on the input pipeline (GPU utilisation
// under 70% while the loader wait is high, sustained over a window), say so once, suggest a
// worker count and a memory-mapped `tensor` dataset, and stay quiet for a long interval after.
#pragma once

#include <deque>
#include <optional>
#include <thread>

#include "remote-runtime/train/telemetry.hpp"
#include "remote-runtime/train/train_config.hpp"

namespace ferry::train {

struct AdviceOptions {
  double gpu_util_threshold_percent = 70.0;
  double data_wait_threshold = 0.25;      // GPU rule: share of wall time spent waiting for batches
  double cpu_data_wait_threshold = 0.35;  // CPU (or no NVML) rule: the wait alone must be this high
  double window_s = 30.0;                 // the condition must hold over this long
  int min_samples = 3;
  double repeat_interval_s = 900.0;       // after advice, silence for this long
  int max_workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

struct AdviceContext {
  int workers = 2;                        // data.workers now
  DataSource source = DataSource::synthetic;
  bool on_gpu = true;
};

struct AdviceSample {
  double time_s = 0;                      // monotonic seconds
  std::optional<double> gpu_util_percent; // absent without NVML (or on CPU)
  double data_wait_fraction = 0;
};

class DataStarvationAdvisor {
 public:
  explicit DataStarvationAdvisor(AdviceContext context, AdviceOptions options = {}) : context_(context), options_(options) {}

  // Feed one sample per step event; returns advice when the rule fires.
  std::optional<AdviceRecord> observe(const AdviceSample& sample);

  // Workers to suggest for a loader that makes the trainer wait `wait_fraction` of the time.
  static int suggested_workers(int workers, double wait_fraction, int max_workers);

 private:
  AdviceContext context_;
  AdviceOptions options_;
  std::deque<AdviceSample> window_;
  std::optional<double> last_advice_s_;
};

}  // namespace ferry::train

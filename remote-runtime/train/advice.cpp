// The data-starvation rule (see advice.hpp). Judged over a whole window, by averages and by
// most samples, so one slow batch (a checkpoint, an eval) never triggers advice.
#include "remote-runtime/train/advice.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ferry::train {

int DataStarvationAdvisor::suggested_workers(int workers, double wait_fraction, int max_workers) {
  // With the loader as the bottleneck, the step rate is the loader's; removing the wait needs
  // 1/(1-wait) times the loader throughput, plus a quarter of headroom for jitter.
  const double wait = std::clamp(wait_fraction, 0.0, 0.9);
  const int base = std::max(workers, 1);
  const int want = static_cast<int>(std::ceil(base * 1.25 / (1.0 - wait) - 1e-9));
  return std::clamp(std::max(want, workers + 1), 1, std::max(1, max_workers));
}

std::optional<AdviceRecord> DataStarvationAdvisor::observe(const AdviceSample& sample) {
  window_.push_back(sample);
  while (!window_.empty() && window_.front().time_s < sample.time_s - options_.window_s) window_.pop_front();
  if (last_advice_s_ && sample.time_s - *last_advice_s_ < options_.repeat_interval_s) return std::nullopt;
  if (static_cast<int>(window_.size()) < options_.min_samples) return std::nullopt;
  // The window must really span the period.
  if (sample.time_s - window_.front().time_s < options_.window_s) return std::nullopt;

  double wait_sum = 0, util_sum = 0;
  int util_count = 0;
  for (const auto& s : window_) {
    wait_sum += std::clamp(s.data_wait_fraction, 0.0, 1.0);
    if (s.gpu_util_percent && std::isfinite(*s.gpu_util_percent)) {
      util_sum += *s.gpu_util_percent;
      ++util_count;
    }
  }
  const double wait = wait_sum / static_cast<double>(window_.size());
  const bool have_util = context_.on_gpu && util_count * 2 >= static_cast<int>(window_.size());
  const double util = have_util ? util_sum / util_count : 0.0;

  // Sustained: the averages meet the rule and so do at least 80% of the samples one by one (an
  // average alone lets one long stall, a checkpoint or an eval, speak for the whole window).
  auto starving = [&](double util_percent, double wait_fraction) {
    return have_util ? util_percent < options_.gpu_util_threshold_percent && wait_fraction >= options_.data_wait_threshold
                     : wait_fraction >= options_.cpu_data_wait_threshold;
  };
  if (!starving(util, wait)) return std::nullopt;
  int starving_samples = 0;
  for (const auto& s : window_) {
    const double u = s.gpu_util_percent.value_or(util);
    starving_samples += starving(u, std::clamp(s.data_wait_fraction, 0.0, 1.0)) ? 1 : 0;
  }
  if (starving_samples * 5 < static_cast<int>(window_.size()) * 4) return std::nullopt;

  AdviceRecord advice;
  advice.kind = "data_starvation";
  advice.data_wait_fraction = wait;
  if (have_util) advice.gpu_util_percent = util;
  const int workers = suggested_workers(context_.workers, wait, options_.max_workers);
  if (workers > context_.workers) advice.suggested_workers = workers;
  advice.suggest_tensor_dataset = context_.source != DataSource::tensor;

  char head[256];
  if (have_util) {
    std::snprintf(head, sizeof head, "GPU utilization averaged %.0f%% over the last %.0f s while %.0f%% of the time went to waiting for data",
                  util, options_.window_s, wait * 100);
  } else {
    std::snprintf(head, sizeof head, "%.0f%% of the time over the last %.0f s went to waiting for data", wait * 100, options_.window_s);
  }
  std::string message = std::string(head) + ": the input pipeline is the bottleneck.";
  if (advice.suggested_workers) {
    message += " Try data.workers = " + std::to_string(*advice.suggested_workers) + " (now " + std::to_string(context_.workers) + ")";
    message += advice.suggest_tensor_dataset ? "," : ".";
  }
  if (advice.suggest_tensor_dataset) {
    message += advice.suggested_workers ? " or" : " Try";
    message += " a memory-mapped dataset: data.source \"tensor\" with files made by `ferry-train pack`.";
  }
  if (!advice.suggested_workers && !advice.suggest_tensor_dataset) {
    message += " The loader already has " + std::to_string(context_.workers) +
               " workers on a memory-mapped dataset: raise data.prefetch or check the storage the files are on.";
  }
  advice.message = std::move(message);
  last_advice_s_ = sample.time_s;
  return advice;
}

}  // namespace ferry::train

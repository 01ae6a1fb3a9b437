// The auto batch size search (see batch_size_search.hpp). Every answer is a batch that a real
// probe ran within budget, so the result is never above the true maximum.
#include "remote-runtime/train/batch_size_search.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "remote-runtime/train/memory_size.hpp"

namespace ferry::train {
namespace {

struct Point {
  int batch = 0;
  double peak = 0;
};

// Where the parabola through three points (increasing batch, c the largest) reaches `target`
// beyond c; nothing unless the curvature is positive.
std::optional<double> parabola_crossing(const Point& a, const Point& b, const Point& c, double target) {
  const double f_ab = (b.peak - a.peak) / (b.batch - a.batch);
  const double f_bc = (c.peak - b.peak) / (c.batch - b.batch);
  const double curvature = (f_bc - f_ab) / (c.batch - a.batch);
  if (!(curvature > 0) || !(f_bc > 0) || target <= c.peak) return std::nullopt;
  // Newton form around c: peak(c + d) = c.peak + f_bc * d + curvature * d * (d + c - b).
  const double lin = f_bc + curvature * (c.batch - b.batch);
  const double disc = lin * lin + 4 * curvature * (target - c.peak);
  return c.batch + (-lin + std::sqrt(disc)) / (2 * curvature);
}

class Search {
 public:
  Search(const ProbeFn& probe, const BatchSearchOptions& o) : probe_(probe), o_(o) {}

  Expected<BatchSearchResult, BatchSearchError> run() {
    if (o_.budget_bytes <= 0) return fail("the memory budget is " + std::to_string(o_.budget_bytes) + " bytes: nothing can fit");
    if (o_.max_batch < 1) return fail("max batch must be >= 1");
    const int g = std::max(1, o_.granularity);
    const int max_probes = std::max(2, o_.max_probes);
    if (o_.max_batch < g) {
      // Too small a ceiling for the granularity: only max_batch itself can be tried.
      if (!probe(o_.max_batch, "max_batch", std::nullopt)) return fail_first(o_.max_batch);
      result_.batch = o_.max_batch;
      result_.hit_max_batch = true;
      return finish();
    }
    const int top = o_.max_batch / g * g;

    if (!probe(g, "sizing", std::nullopt)) return fail_first(g);
    Point lo{g, static_cast<double>(last().peak_bytes)};
    std::optional<Point> prev;                 // the fitting point before lo (for the local slope)
    std::optional<Point> prev2;                // and the one before that (for the curvature)
    std::optional<int> hi;                     // smallest batch known not to fit
    std::optional<double> hi_peak;             // its measurement, when it did not run out of memory
    if (top > g) {
      const int b2 = std::min(16 * g, top);
      if (probe(b2, "sizing", std::nullopt)) {
        prev = lo;
        lo = Point{b2, static_cast<double>(last().peak_bytes)};
        result_.bytes_per_sample = (lo.peak - prev->peak) / (lo.batch - prev->batch);
        result_.fixed_bytes = prev->peak - result_.bytes_per_sample * prev->batch;
      } else {
        hi = b2;
        if (!last().out_of_memory) hi_peak = static_cast<double>(last().peak_bytes);
      }
    }

    const double budget = static_cast<double>(o_.budget_bytes);
    int misses_in_row = 0;  // consecutive probes that did not fit, once bracketed
    bool fresh_since_oom = false;  // a fitting probe came after the last out-of-memory one
    while (static_cast<int>(result_.probes.size()) < max_probes) {
      if (!hi && lo.batch >= top) break;
      if (hi && (*hi - lo.batch <= g || lo.batch >= (1.0 - o_.tolerance) * (*hi - g))) break;

      // Local slope: the chord from lo to a measured hi, else the secant through the two
      // largest fitting points (both stay close to the budget as the search narrows).
      std::optional<double> slope;
      if (hi && hi_peak && *hi_peak > lo.peak) {
        slope = (*hi_peak - lo.peak) / (*hi - lo.batch);
      } else if (prev && lo.peak > prev->peak) {
        slope = (lo.peak - prev->peak) / (lo.batch - prev->batch);
      }
      // After misses, aim below the budget, more so each time (the Illinois idea): a chord that
      // keeps overshooting (concave memory, measurement noise) then lands on the fitting side.
      const double shade = misses_in_row == 0 ? 0.0 : std::min(0.16, 0.02 * static_cast<double>(1 << std::min(misses_in_row - 1, 4)));
      const double target = budget * (1.0 - shade);
      std::optional<int> predicted;
      if (slope) {
        double p = lo.batch + (target - lo.peak) / *slope;
        // Super-linear memory (batch-coupled buffers): a line through points below lo
        // under-estimates the slope at lo. Three fitting points show the curvature; when it is
        // positive, the parabola's (smaller) prediction is used instead.
        if (prev2 && prev) {
          if (auto q = parabola_crossing(*prev2, *prev, lo, target)) p = std::min(p, *q);
        }
        predicted = static_cast<int>(std::clamp(p, 0.0, 2.0e9));
      }

      int candidate = 0;
      std::string reason;
      if (!hi) {
        // Open above: go to the prediction (memory flat or shrinking in the noise: try the top).
        candidate = predicted ? *predicted / g * g : top;
        candidate = std::clamp(candidate, lo.batch + g, top);
        reason = result_.probes.size() == 2 ? "predicted" : "secant";
      } else {
        // A measured hi gives a chord that is trusted (shading handles its overshoot). After an
        // out-of-memory hi, the slope that predicted it is discredited: until a new fitting point
        // refreshes the slope, never go past the middle of the bracket (the geometric middle
        // while it spans orders of magnitude after a wild first prediction).
        const double ratio = static_cast<double>(*hi) / lo.batch;
        const int mid = static_cast<int>(ratio > 4 ? std::sqrt(static_cast<double>(lo.batch) * *hi) : (lo.batch + *hi) / 2.0) / g * g;
        if (predicted && (hi_peak || fresh_since_oom || *predicted / g * g <= mid)) {
          candidate = *predicted / g * g;
          reason = "secant";
        } else {
          candidate = mid;
          reason = "bisect";
        }
        candidate = std::clamp(candidate, lo.batch + g, *hi - g);
      }
      if (candidate == top && !hi) reason = "max_batch";

      if (probe(candidate, reason, predicted)) {
        prev2 = prev;
        prev = lo;
        lo = Point{candidate, static_cast<double>(last().peak_bytes)};
        misses_in_row = 0;
        fresh_since_oom = true;
      } else {
        if (last().out_of_memory) fresh_since_oom = false;
        hi = candidate;
        hi_peak.reset();
        if (!last().out_of_memory) hi_peak = static_cast<double>(last().peak_bytes);
        ++misses_in_row;
      }
    }
    verify_upward(lo, prev, hi, top, g);
    result_.batch = lo.batch;
    result_.hit_max_batch = !hi && lo.batch >= top;
    return finish();
  }

 private:
  // The search above plans with a line through measurements that may over-estimate the slope
  // near the budget (sub-linear growth, allocator rounding) and stops at a 1% bracket or the probe
  // cap; a few real probes upward recover that gap. Every accepted batch still ran within budget.
  void verify_upward(Point& lo, const std::optional<Point>& prev, std::optional<int> hi, int top, int g) {
    if (o_.verify_probes <= 0) return;
    const int limit = hi ? *hi - g : top;
    if (lo.batch >= limit) return;
    double slope = result_.bytes_per_sample;
    if (prev && lo.peak > prev->peak) slope = (lo.peak - prev->peak) / (lo.batch - prev->batch);
    const double headroom = static_cast<double>(o_.budget_bytes) - lo.peak;
    int stride = g;
    if (slope > 0 && headroom > 0) stride = std::max(g, static_cast<int>(std::min(headroom / slope, 2.0e9)) / g * g);
    for (int used = 0; used < o_.verify_probes && stride >= g; ++used) {
      const int upper = hi ? *hi - g : top;
      if (lo.batch >= upper) break;
      const int candidate = std::min(lo.batch + stride, upper);
      if (probe(candidate, "verify", std::nullopt)) {
        lo = Point{candidate, static_cast<double>(last().peak_bytes)};
        stride *= 2;
      } else {
        hi = candidate;
        stride = (candidate - lo.batch) / 2 / g * g;
      }
    }
  }

  bool probe(int batch, std::string reason, std::optional<int> predicted) {
    const ProbeOutcome out = probe_(batch);
    ProbeRecord rec;
    rec.batch = batch;
    rec.out_of_memory = out.out_of_memory;
    rec.peak_bytes = out.out_of_memory ? 0 : out.peak_bytes;
    rec.fits = !out.out_of_memory && out.peak_bytes <= o_.budget_bytes;
    rec.reason = std::move(reason);
    rec.predicted_max = predicted;
    result_.probes.push_back(rec);
    return rec.fits;
  }

  const ProbeRecord& last() const { return result_.probes.back(); }

  Unexpected<BatchSearchError> fail(std::string message) {
    return Unexpected(BatchSearchError{std::move(message), result_.probes});
  }

  Unexpected<BatchSearchError> fail_first(int batch) {
    const ProbeRecord& r = last();
    if (r.out_of_memory) {
      return fail("batch " + std::to_string(batch) + " already runs out of memory; nothing smaller is tried (budget " +
                  format_bytes(static_cast<double>(o_.budget_bytes)) + "): use a smaller model, bf16, or a fixed batch size");
    }
    return fail("batch " + std::to_string(batch) + " already needs " + format_bytes(static_cast<double>(r.peak_bytes)) +
                ", over the budget of " + format_bytes(static_cast<double>(o_.budget_bytes)) +
                ": use a smaller model, bf16, or a fixed batch size");
  }

  Expected<BatchSearchResult, BatchSearchError> finish() {
    result_.budget_bytes = o_.budget_bytes;
    return std::move(result_);
  }

  const ProbeFn& probe_;
  const BatchSearchOptions& o_;
  BatchSearchResult result_;
};

}  // namespace

Expected<BatchSearchResult, BatchSearchError> search_batch_size(const ProbeFn& probe, const BatchSearchOptions& options) {
  return Search(probe, options).run();
}

nlohmann::json to_json(const ProbeRecord& p) {
  nlohmann::json j = {{"batch", p.batch}, {"fits", p.fits}, {"out_of_memory", p.out_of_memory}, {"reason", p.reason}};
  if (!p.out_of_memory) j["peak_bytes"] = p.peak_bytes;
  if (p.predicted_max) j["predicted_max"] = *p.predicted_max;
  return j;
}

nlohmann::json to_json(const BatchSearchResult& r) {
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& p : r.probes) probes.push_back(to_json(p));
  return {{"batch_size", r.batch},
          {"budget_bytes", r.budget_bytes},
          {"fixed_bytes", r.fixed_bytes},
          {"bytes_per_sample", r.bytes_per_sample},
          {"hit_max_batch", r.hit_max_batch},
          {"probes", probes}};
}

}  // namespace ferry::train

// Auto batch size: a pure search over a probe callback. Two small probes (8 and 128 with the
// default granularity) fit a line (peak bytes = fixed + per_sample * batch); the line predicts
// the largest batch within the budget, and real probes then verify and narrow the bracket
// (secant/parabola steps, shaded after misses, bisection after an out-of-memory), all in
// multiples of `granularity`. Never the plain doubling.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "remote-runtime/train/expected.hpp"

namespace ferry::train {

// What one real probe measured: the peak memory of a few training steps at a batch size, or an
// out-of-memory failure (no measurement).
struct ProbeOutcome {
  bool out_of_memory = false;
  std::int64_t peak_bytes = 0;

  static ProbeOutcome oom() { return {true, 0}; }
  static ProbeOutcome peak(std::int64_t bytes) { return {false, bytes}; }
};

using ProbeFn = std::function<ProbeOutcome(int batch)>;

struct BatchSearchOptions {
  std::int64_t budget_bytes = 0;  // peak memory a batch may use (free memory x fraction, or the CPU limit)
  int granularity = 8;            // answers and probes are multiples of this
  int max_batch = 65536;          // never probe above
  int max_probes = 8;             // including the two sizing probes
  double tolerance = 0.01;        // stop once the bracket is this tight (relative)
  // Extra probes, beyond max_probes, for a final upward verification: from the answer, step up
  // by the headroom the local slope predicts (at least `granularity`), doubling the stride while
  // probes fit and halving it after a miss. Closes what the tolerance and the probe cap leave
  // between the answer and the budget; never goes above a batch already known not to fit.
  int verify_probes = 0;
};

// One probe, as reported in the `auto_batch` event.
struct ProbeRecord {
  int batch = 0;
  bool out_of_memory = false;
  std::int64_t peak_bytes = 0;        // 0 when out_of_memory
  bool fits = false;                  // !out_of_memory && peak_bytes <= budget
  std::string reason;                 // "sizing", "predicted", "secant", "bisect", "max_batch", "verify"
  std::optional<int> predicted_max;   // what the model predicted when this probe was chosen
};

struct BatchSearchResult {
  int batch = 0;                      // the largest verified fitting batch
  std::vector<ProbeRecord> probes;
  std::int64_t budget_bytes = 0;
  double fixed_bytes = 0;             // line fitted on the two sizing probes
  double bytes_per_sample = 0;
  bool hit_max_batch = false;         // the answer is max_batch (memory was not the limit)
};

struct BatchSearchError {
  std::string message;
  std::vector<ProbeRecord> probes;
};

Expected<BatchSearchResult, BatchSearchError> search_batch_size(const ProbeFn& probe, const BatchSearchOptions& options);

nlohmann::json to_json(const ProbeRecord& probe);
nlohmann::json to_json(const BatchSearchResult& result);

}  // namespace ferry::train

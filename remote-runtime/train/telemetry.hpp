// ferry-train's telemetry: events as JSON lines (stdout for the helper, a copy in events.jsonl),
// metrics.csv, and plot.svg. The event schema is documented in docs/train-events.md.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "remote-runtime/train/expected.hpp"
#include "remote-runtime/train/nvml.hpp"
#include "remote-runtime/train/svg_plot.hpp"

namespace ferry::train {

// One event: "type" becomes the `event` field, `fields` the rest of the line. The typed records
// below build the documented ones; others (config, auto_batch, interrupted) are built directly.
struct Event {
  std::string type;
  nlohmann::json fields = nlohmann::json::object();
};

struct StepRecord {
  std::int64_t step = 0;
  std::int64_t epoch = 0;
  double loss = 0;                 // mean over the steps since the last step event
  double lr = 0;
  double samples_per_s = 0;
  double data_wait_fraction = 0;   // share of wall time spent waiting for batches
  double step_time_s = 0;
  std::optional<double> loss_scale;          // fp16 only
  std::optional<std::int64_t> skipped_steps;  // fp16 only: steps skipped on inf/nan gradients
  std::vector<GpuSample> gpus;                // empty without NVML
};

struct EvalRecord {
  std::int64_t step = 0;
  double loss = 0;
  std::optional<double> accuracy;  // classification only
  double best_loss = 0;
};

struct CheckpointRecord {
  std::int64_t step = 0;
  std::string path;
  std::string reason;  // "periodic", "final", "sigterm", "sigint"
};

struct AdviceRecord {
  std::string kind;     // "data_starvation"
  std::string message;  // for people
  std::optional<int> suggested_workers;
  bool suggest_tensor_dataset = false;
  std::optional<double> gpu_util_percent;
  double data_wait_fraction = 0;
};

struct DoneRecord {
  std::int64_t step = 0;
  std::int64_t epoch = 0;
  std::string reason;       // "max_steps", "epochs", "early_stopping"
  std::string param_hash;   // hash of the final parameters' bytes
  double elapsed_s = 0;
  std::optional<double> final_loss;
  std::optional<double> eval_loss;
};

struct ErrorRecord {
  std::string stage;    // "config", "data", "device", "auto_batch", ...
  std::string message;
  std::optional<std::string> pointer;  // JSON pointer into the config, for config errors
};

Event to_event(const StepRecord& r);
Event to_event(const EvalRecord& r);
Event to_event(const CheckpointRecord& r);
Event to_event(const AdviceRecord& r);
Event to_event(const DoneRecord& r);
Event to_event(const ErrorRecord& r);

// The line for an event: {"event": type, "time": unix seconds, ...fields}, no newline. Non-finite
// numbers become null (JSON has no NaN).
std::string event_line(const Event& event, double unix_time);

// metrics.csv: one row per step event and one per eval event (eval columns filled), flushed per row.
class MetricsCsv {
 public:
  static constexpr const char* kColumns[] = {"step", "epoch", "loss", "lr", "samples_per_s", "data_wait_fraction", "step_time_s",
                                             "eval_loss", "eval_accuracy", "gpu_util_percent", "gpu_mem_used_bytes", "gpu_power_w",
                                             "gpu_temp_c"};
  // append: keep existing rows (a resumed run); the header is written only to a new file.
  static Expected<MetricsCsv, std::string> open(const std::filesystem::path& file, bool append);
  MetricsCsv(MetricsCsv&&) noexcept;
  MetricsCsv& operator=(MetricsCsv&&) noexcept;
  ~MetricsCsv();
  void add(const Event& event);  // ignores events other than step and eval

 private:
  explicit MetricsCsv(std::FILE* file) : file_(file) {}
  std::FILE* file_ = nullptr;
};

class TelemetryWriter {
 public:
  // `out`: where lines go live (stdout for rank 0; nullptr to write files only).
  explicit TelemetryWriter(std::FILE* out = stdout) : out_(out) {}
  TelemetryWriter(const TelemetryWriter&) = delete;
  TelemetryWriter& operator=(const TelemetryWriter&) = delete;
  ~TelemetryWriter();

  // Starts events.jsonl and metrics.csv in `dir` (created if missing); plot.svg goes there too.
  Expected<void, std::string> open_output(const std::filesystem::path& dir, bool append);
  void set_title(std::string title) { plot_.title = std::move(title); }

  void emit(const Event& event);
  template <typename Record>
  void emit(const Record& record) {
    emit(to_event(record));
  }

  Expected<void, std::string> write_plot() const;
  const PlotData& plot_data() const { return plot_; }

 private:
  std::FILE* out_;
  std::FILE* events_ = nullptr;
  std::optional<MetricsCsv> csv_;
  std::filesystem::path dir_;
  PlotData plot_;
};

}  // namespace ferry::train

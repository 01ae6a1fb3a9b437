// ferry-train's event output, on top of ferry_train_support's TelemetryWriter: JSON lines on stdout
// for rank 0 (the helper parses them), events.jsonl, metrics.csv and plot.svg in the output dir.
// Other ranks write nothing but their errors, to stderr. Torch-free.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "remote-runtime/train/telemetry.hpp"

namespace ferry::train {

class EventStream {
 public:
  EventStream();
  // Rank 0 speaks on stdout; call before open_output.
  void set_stdout(bool on);
  void open_output(const std::filesystem::path& output_dir, bool append);
  void emit(const Event& event);
  void emit(const std::string& type, nlohmann::json fields) { emit(Event{type, std::move(fields)}); }
  template <typename Record>
  void emit(const Record& record) {
    emit(to_event(record));
  }
  void write_plot();

 private:
  bool stdout_ = true;
  std::unique_ptr<TelemetryWriter> writer_;
};

}  // namespace ferry::train

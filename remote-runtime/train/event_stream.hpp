// ferry-train's event output: JSON lines on stdout (the helper parses them), a copy in
// events.jsonl, step metrics in metrics.csv and the curves in plot.svg. Torch-free.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::train {

class EventStream {
 public:
  // `write_files`: false on ranks other than 0 and before the output dir is known.
  EventStream() = default;
  void open_output(const std::filesystem::path& output_dir, bool append);
  // Writes {"event": type, "time": unix seconds, ...fields} as one line.
  void emit(const std::string& type, nlohmann::json fields);
  void set_stdout(bool on) { stdout_ = on; }
  // Renders plot.svg from the step/eval events seen so far.
  void write_plot();

 private:
  bool stdout_ = true;
  std::filesystem::path dir_;
  std::ofstream events_;
  std::ofstream csv_;
  std::vector<std::pair<double, double>> loss_points_;
  std::vector<std::pair<double, double>> eval_points_;
};

}  // namespace ferry::train

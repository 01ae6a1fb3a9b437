// The training curves as a self-contained SVG: loss vs step (train line, eval points) above,
// throughput (samples/s) vs step below, with ticks, labels, title and legend.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "remote-runtime/train/expected.hpp"

namespace ferry::train {

struct PlotData {
  std::string title = "ferry-train";
  struct TrainPoint {
    double step = 0;
    double loss = 0;           // NaN/inf points are skipped (and counted in a note)
    double samples_per_s = 0;
  };
  struct EvalPoint {
    double step = 0;
    double loss = 0;
  };
  std::vector<TrainPoint> train;
  std::vector<EvalPoint> eval;
};

std::string render_svg_plot(const PlotData& data);
// Written atomically (temp file + rename) so a viewer never sees half a plot.
Expected<void, std::string> write_svg_plot(const std::filesystem::path& file, const PlotData& data);

}  // namespace ferry::train

// Event output. stdout is flushed per line because the helper streams it live to the IDE.
#include "remote-runtime/train/event_stream.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>

namespace ferry::train {
namespace {

constexpr const char* kCsvColumns[] = {"step", "epoch", "loss", "lr", "samples_per_s", "data_wait_fraction", "eval_loss"};

std::string csv_cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.9g", v.get<double>());
    return buf;
  }
  return v.dump();
}

}  // namespace

void EventStream::open_output(const std::filesystem::path& output_dir, bool append) {
  dir_ = output_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const auto mode = append ? std::ios::app : std::ios::trunc;
  events_.open(dir_ / "events.jsonl", std::ios::out | mode);
  const bool csv_exists = append && std::filesystem::exists(dir_ / "metrics.csv");
  csv_.open(dir_ / "metrics.csv", std::ios::out | mode);
  if (!csv_exists) {
    for (std::size_t i = 0; i < std::size(kCsvColumns); ++i) csv_ << (i ? "," : "") << kCsvColumns[i];
    csv_ << '\n';
  }
}

void EventStream::emit(const std::string& type, nlohmann::json fields) {
  nlohmann::json event = {{"event", type}};
  const auto now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  event["time"] = now;
  for (auto& [k, v] : fields.items()) event[k] = v;
  const auto line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (stdout_) {
    std::cout << line << '\n';
    std::cout.flush();
  } else if (type == "error") {
    std::cerr << line << '\n';  // ranks other than 0 report only their failures, on stderr
  }
  if (events_.is_open()) {
    events_ << line << '\n';
    events_.flush();
  }
  if (type == "step" && csv_.is_open()) {
    for (std::size_t i = 0; i < std::size(kCsvColumns); ++i) {
      csv_ << (i ? "," : "") << csv_cell(event.value(kCsvColumns[i], nlohmann::json()));
    }
    csv_ << '\n';
    csv_.flush();
  }
  if (type == "step" && event.contains("loss")) loss_points_.emplace_back(event["step"].get<double>(), event["loss"].get<double>());
  if (type == "eval" && event.contains("loss")) eval_points_.emplace_back(event["step"].get<double>(), event["loss"].get<double>());
}

void EventStream::write_plot() {
  if (dir_.empty()) return;
  std::ofstream svg(dir_ / "plot.svg", std::ios::trunc);
  const double w = 640, h = 360, pad = 40;
  double x_max = 1, y_max = 1e-12, y_min = 1e300;
  for (const auto* pts : {&loss_points_, &eval_points_}) {
    for (const auto& [x, y] : *pts) {
      x_max = std::max(x_max, x);
      y_max = std::max(y_max, y);
      y_min = std::min(y_min, y);
    }
  }
  if (y_min > y_max) y_min = 0;
  if (y_max - y_min < 1e-12) y_max = y_min + 1;
  auto path = [&](const std::vector<std::pair<double, double>>& pts) {
    std::string d;
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const double px = pad + (w - 2 * pad) * pts[i].first / x_max;
      const double py = h - pad - (h - 2 * pad) * (pts[i].second - y_min) / (y_max - y_min);
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%s%.1f,%.1f", i ? " L" : "M", px, py);
      d += buf;
    }
    return d;
  };
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h << "\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << pad << "\" y=\"20\" font-family=\"sans-serif\" font-size=\"12\">loss (blue: train, orange: eval)</text>\n";
  if (!loss_points_.empty()) svg << "<path d=\"" << path(loss_points_) << "\" fill=\"none\" stroke=\"#1f77b4\"/>\n";
  if (!eval_points_.empty()) svg << "<path d=\"" << path(eval_points_) << "\" fill=\"none\" stroke=\"#ff7f0e\"/>\n";
  svg << "</svg>\n";
}

}  // namespace ferry::train

// SVG rendering of the training curves. Plain string building: no dependency, and the output is
// small enough to rewrite at every checkpoint.
#include "remote-runtime/train/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>
#include <system_error>

namespace ferry::train {
namespace {

constexpr double kWidth = 800, kPanelHeight = 260, kTop = 56, kGap = 48, kLeft = 84, kRight = 24;
constexpr const char* kTrainColour = "#1f77b4";
constexpr const char* kEvalColour = "#d62728";
constexpr const char* kThroughputColour = "#2ca02c";

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        // Control characters are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') out += c;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Short tick labels: 0.5, 12, 3.2k, 1.5M, 1e-05.
std::string tick_label(double v) {
  char buf[32];
  const double a = std::fabs(v);
  if (a == 0) return "0";
  if (a >= 1e6) {
    std::snprintf(buf, sizeof buf, "%gM", v / 1e6);
  } else if (a >= 1e4) {
    std::snprintf(buf, sizeof buf, "%gk", v / 1e3);
  } else if (a < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.0e", v);
  } else {
    std::snprintf(buf, sizeof buf, "%g", std::round(v * 1e6) / 1e6);
  }
  return buf;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

// 1-2-5 ticks covering [lo, hi]; the range is widened to whole ticks. A single value (or none)
// gets a unit-wide range around it so the point lands inside the panel.
struct Axis {
  double lo = 0, hi = 1;
  std::vector<double> ticks;
};

Axis nice_axis(Range r, bool from_zero) {
  if (r.empty()) r = Range{0, 1};
  if (from_zero) r.lo = std::min(r.lo, 0.0);
  if (r.hi - r.lo < 1e-12 * std::max(1.0, std::fabs(r.hi))) {
    const double pad = std::fabs(r.hi) > 0 ? std::fabs(r.hi) * 0.1 : 1.0;
    r.lo -= pad;
    r.hi += pad;
    if (from_zero) r.lo = std::min(r.lo, 0.0);
  }
  const double raw = (r.hi - r.lo) / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  }
  Axis a;
  a.lo = std::floor(r.lo / step) * step;
  a.hi = std::ceil(r.hi / step) * step;
  for (double t = a.lo; t <= a.hi + step * 1e-9; t += step) a.ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  return a;
}

class Panel {
 public:
  Panel(double top, Axis x, Axis y) : top_(top), x_(std::move(x)), y_(std::move(y)) {}

  double px(double v) const { return kLeft + (v - x_.lo) / (x_.hi - x_.lo) * (kWidth - kLeft - kRight); }
  double py(double v) const { return top_ + kPanelHeight - (v - y_.lo) / (y_.hi - y_.lo) * kPanelHeight; }

  void frame(std::string& out, const std::string& y_label) const {
    out += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(top_) + "\" width=\"" + num(kWidth - kLeft - kRight) + "\" height=\"" +
           num(kPanelHeight) + "\" fill=\"none\" stroke=\"#888\"/>\n";
    for (double t : y_.ticks) {
      out += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(py(t)) + "\" x2=\"" + num(kWidth - kRight) + "\" y2=\"" + num(py(t)) +
             "\" stroke=\"#eee\"/>\n";
      out += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(py(t) + 4) + "\" text-anchor=\"end\">" + tick_label(t) + "</text>\n";
    }
    for (double t : x_.ticks) {
      out += "<line x1=\"" + num(px(t)) + "\" y1=\"" + num(top_ + kPanelHeight) + "\" x2=\"" + num(px(t)) + "\" y2=\"" +
             num(top_ + kPanelHeight + 5) + "\" stroke=\"#888\"/>\n";
      out += "<text x=\"" + num(px(t)) + "\" y=\"" + num(top_ + kPanelHeight + 18) + "\" text-anchor=\"middle\">" + tick_label(t) + "</text>\n";
    }
    out += "<text transform=\"translate(18," + num(top_ + kPanelHeight / 2) + ") rotate(-90)\" text-anchor=\"middle\">" + y_label + "</text>\n";
    out += "<text x=\"" + num((kLeft + kWidth - kRight) / 2) + "\" y=\"" + num(top_ + kPanelHeight + 34) + "\" text-anchor=\"middle\">step</text>\n";
  }

  // A polyline through the points, lifting the pen at a NaN marker (a diverged step) so the gap
  // shows; a lone point becomes a dot so it stays visible.
  void line(std::string& out, const std::vector<std::pair<double, double>>& pts, const char* colour) const {
    std::vector<std::pair<double, double>> finite;
    for (const auto& p : pts) {
      if (std::isfinite(p.first)) finite.push_back(p);
    }
    if (finite.size() == 1) {
      dots(out, finite, colour);
      return;
    }
    if (finite.empty()) return;
    std::string d;
    bool pen_up = true;
    for (const auto& [x, y] : pts) {
      if (!std::isfinite(x)) {
        pen_up = true;
        continue;
      }
      d += pen_up ? (d.empty() ? "M" : " M") : " L";
      pen_up = false;
      d += num(px(x));
      d += ',';
      d += num(py(y));
    }
    out += "<path d=\"" + d + "\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"1.5\"/>\n";
  }

  void dots(std::string& out, const std::vector<std::pair<double, double>>& pts, const char* colour) const {
    for (const auto& [x, y] : pts) {
      out += "<circle cx=\"" + num(px(x)) + "\" cy=\"" + num(py(y)) + "\" r=\"3.5\" fill=\"" + colour + "\"/>\n";
    }
  }

 private:
  double top_;
  Axis x_, y_;
};

void legend_entry(std::string& out, double x, double y, const char* colour, bool dot, const std::string& label) {
  if (dot) {
    out += "<circle cx=\"" + num(x + 10) + "\" cy=\"" + num(y - 4) + "\" r=\"3.5\" fill=\"" + colour + "\"/>\n";
  } else {
    out += "<line x1=\"" + num(x) + "\" y1=\"" + num(y - 4) + "\" x2=\"" + num(x + 20) + "\" y2=\"" + num(y - 4) + "\" stroke=\"" +
           colour + "\" stroke-width=\"2\"/>\n";
  }
  out += "<text x=\"" + num(x + 26) + "\" y=\"" + num(y) + "\">" + label + "</text>\n";
}

}  // namespace

std::string render_svg_plot(const PlotData& data) {
  std::vector<std::pair<double, double>> loss, eval, speed;
  std::size_t dropped = 0;
  Range xs, loss_range, speed_range;
  for (const auto& p : data.train) {
    if (!std::isfinite(p.step)) {
      ++dropped;
      continue;
    }
    if (std::isfinite(p.loss)) {
      loss.emplace_back(p.step, p.loss);
      loss_range.add(p.loss);
      xs.add(p.step);
    } else {
      loss.emplace_back(std::nan(""), std::nan(""));  // breaks the line here
      ++dropped;
    }
    if (std::isfinite(p.samples_per_s)) {
      speed.emplace_back(p.step, p.samples_per_s);
      speed_range.add(p.samples_per_s);
      xs.add(p.step);
    }
  }
  for (const auto& p : data.eval) {
    if (std::isfinite(p.step) && std::isfinite(p.loss)) {
      eval.emplace_back(p.step, p.loss);
      loss_range.add(p.loss);
      xs.add(p.step);
    } else {
      ++dropped;
    }
  }
  const Axis x_axis = nice_axis(xs, true);
  const Panel loss_panel(kTop, x_axis, nice_axis(loss_range, false));
  const double speed_top = kTop + kPanelHeight + kGap;
  const Panel speed_panel(speed_top, x_axis, nice_axis(speed_range, true));
  const double height = speed_top + kPanelHeight + 44;

  std::string out;
  out.reserve(8192 + 40 * (loss.size() + speed.size() + eval.size()));
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) + "\" height=\"" + num(height) + "\" viewBox=\"0 0 " +
         num(kWidth) + " " + num(height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text x=\"" + num(kWidth / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">" + xml_escape(data.title) + "</text>\n";

  loss_panel.frame(out, "loss");
  loss_panel.line(out, loss, kTrainColour);
  loss_panel.dots(out, eval, kEvalColour);
  legend_entry(out, kLeft + 8, kTop - 8, kTrainColour, false, "train loss");
  legend_entry(out, kLeft + 118, kTop - 8, kEvalColour, true, "eval loss");
  if (loss.empty() && eval.empty()) {
    out += "<text x=\"" + num((kLeft + kWidth - kRight) / 2) + "\" y=\"" + num(kTop + kPanelHeight / 2) + "\" text-anchor=\"middle\" fill=\"#888\">no finite loss values yet</text>\n";
  }
  if (dropped > 0) {
    out += "<text x=\"" + num(kWidth - kRight) + "\" y=\"" + num(kTop - 8) + "\" text-anchor=\"end\" fill=\"" + kEvalColour + "\">" +
           std::to_string(dropped) + " non-finite point" + (dropped == 1 ? "" : "s") + " omitted</text>\n";
  }

  speed_panel.frame(out, "samples/s");
  speed_panel.line(out, speed, kThroughputColour);
  legend_entry(out, kLeft + 8, speed_top - 8, kThroughputColour, false, "throughput (samples/s)");
  out += "</svg>\n";
  return out;
}

Expected<void, std::string> write_svg_plot(const std::filesystem::path& file, const PlotData& data) {
  const std::string svg = render_svg_plot(data);
  std::filesystem::path tmp = file;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Unexpected("cannot write " + tmp.string());
    out << svg;
    out.flush();
    if (!out) return Unexpected("write failed: " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) return Unexpected("cannot rename " + tmp.string() + " to " + file.string() + ": " + ec.message());
  return {};
}

}  // namespace ferry::train

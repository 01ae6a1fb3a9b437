// Terminal rendering of ferry-train events; see train_progress.hpp.
#include "helper/train/train_progress.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ferry::training {
namespace {

using nlohmann::json;

std::optional<double> number(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::int64_t integer(const json& body, const char* key, std::int64_t fallback) {
  auto it = body.find(key);
  if (it == body.end() || !it->is_number()) return fallback;
  return it->is_number_integer() ? it->get<std::int64_t>() : static_cast<std::int64_t>(it->get<double>());
}

std::string text(const json& body, const char* key, std::string fallback = {}) {
  auto it = body.find(key);
  return it != body.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// A loss that ferry-train wrote as null was not finite.
std::string loss_text(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end()) return "-";
  if (it->is_number()) return fmt::format("{:.4g}", it->get<double>());
  return "nan";
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string format_rate(double v) {
  if (!std::isfinite(v) || v < 0) return "?";
  if (v >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
  if (v >= 1e4) return fmt::format("{:.1f}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

std::vector<std::string> TrainProgress::on_event(const TrainEvent& event) {
  const json& b = event.body;
  const double time = number(b, "time").value_or(last_time_);
  if (event.kind == "start") {
    started_ = true;
    start_step_ = step_ = integer(b, "step", 0);
    total_ = integer(b, "total_steps", 0);
    start_time_ = last_time_ = time;
    loss_.reset();
    samples_per_s_.reset();
    std::string line = fmt::format("training on {} ({}), {} parameters, batch {}, {} steps", text(b, "device", "?"),
                                   text(b, "precision", "?"), integer(b, "parameters", 0), integer(b, "batch_size", 0), total_);
    if (integer(b, "world_size", 1) > 1)
      line += fmt::format(", {} processes ({})", integer(b, "world_size", 1), text(b, "backend", "?"));
    if (b.value("resumed", false)) line += fmt::format("; resumed at step {}", start_step_);
    return {line};
  }
  if (event.kind == "step") {
    step_ = integer(b, "step", step_);
    last_time_ = time;
    loss_ = number(b, "loss");
    if (!loss_ && b.contains("loss")) loss_ = std::nan("");
    samples_per_s_ = number(b, "samples_per_s");
    return {};
  }
  if (event.kind == "auto_batch") {
    const json result = b.value("result", json::object());
    return {fmt::format("auto batch size: {} ({} probes{})", integer(result, "batch_size", 0),
                        result.value("probes", json::array()).size(),
                        result.value("hit_max_batch", false) ? ", the configured maximum" : "")};
  }
  if (event.kind == "eval") {
    std::string line = fmt::format("eval at step {}: loss {}", integer(b, "step", step_), loss_text(b, "loss"));
    if (auto acc = number(b, "accuracy")) line += fmt::format(", accuracy {:.1f}%", *acc * 100);
    return {line};
  }
  if (event.kind == "checkpoint") {
    return {fmt::format("checkpoint at step {} ({}): {}", integer(b, "step", step_), text(b, "reason", "?"), text(b, "path"))};
  }
  if (event.kind == "advice") return {"advice: " + text(b, "message")};
  if (event.kind == "interrupted") {
    step_ = integer(b, "step", step_);
    return {fmt::format("stopped by {} at step {} after a checkpoint; --resume continues", text(b, "signal", "a signal"), step_)};
  }
  if (event.kind == "done") {
    step_ = integer(b, "step", step_);
    std::string line = fmt::format("done: {} steps ({}) in {}, final loss {}", step_, text(b, "reason", "?"),
                                   format_duration(number(b, "elapsed_s").value_or(NAN)), loss_text(b, "final_loss"));
    if (b.contains("eval_loss")) line += ", eval loss " + loss_text(b, "eval_loss");
    return {line};
  }
  if (event.kind == "error") {
    std::string line = fmt::format("error ({}): {}", text(b, "stage", "?"), text(b, "message"));
    if (auto p = b.find("pointer"); p != b.end() && p->is_string()) line += fmt::format(" [at {}]", p->get<std::string>());
    return {line};
  }
  return {};
}

std::optional<double> TrainProgress::eta_seconds() const {
  const double elapsed = last_time_ - start_time_;
  const auto done = step_ - start_step_;
  if (!started_ || done <= 0 || !(elapsed > 0) || total_ <= 0) return std::nullopt;
  return static_cast<double>(std::max<std::int64_t>(0, total_ - step_)) * elapsed / static_cast<double>(done);
}

std::string TrainProgress::bar(std::size_t width) const {
  if (!started_) return {};
  const double fraction = total_ > 0 ? std::clamp(static_cast<double>(step_) / static_cast<double>(total_), 0.0, 1.0) : 0.0;
  std::string head = fmt::format("step {}/{} ", step_, total_);
  std::string tail = fmt::format(" {:3.0f}%", fraction * 100);
  if (loss_) tail += "  loss " + (std::isfinite(*loss_) ? fmt::format("{:.4g}", *loss_) : std::string("nan"));
  if (samples_per_s_) tail += "  " + format_rate(*samples_per_s_) + " samples/s";
  if (auto eta = eta_seconds()) tail += "  ETA " + format_duration(*eta);
  const std::size_t fixed = head.size() + tail.size() + 2;
  if (fixed + 10 > width) return (head + tail.substr(1)).substr(0, width);  // too narrow for a bar
  const std::size_t cells = std::min<std::size_t>(30, width - fixed);
  const auto filled = static_cast<std::size_t>(std::floor(fraction * static_cast<double>(cells)));
  return head + "[" + std::string(filled, '#') + std::string(cells - filled, '.') + "]" + tail;
}

}  // namespace ferry::training

// Event lines, metrics.csv and the plot data. Each line is written with one fwrite and flushed,
// because the helper reads stdout live and a reader of events.jsonl may be tailing it.
#include "remote-runtime/train/telemetry.hpp"

#include <chrono>
#include <cmath>

namespace ferry::train {
namespace {

using nlohmann::json;

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// nlohmann writes NaN/inf as null already; this keeps nested values consistent too.
void sanitize(json& j) {
  if (j.is_number_float() && !std::isfinite(j.get<double>())) {
    j = nullptr;
  } else if (j.is_structured()) {
    for (auto& v : j) sanitize(v);
  }
}

std::string csv_number(const json& v) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d)) return std::isnan(d) ? "nan" : (d > 0 ? "inf" : "-inf");
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", d);
    return buf;
  }
  if (v.is_number()) return v.dump();
  return "";
}

double now_unix() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

}  // namespace

Event to_event(const StepRecord& r) {
  json f = {{"step", r.step},
            {"epoch", r.epoch},
            {"loss", finite_or_null(r.loss)},
            {"lr", r.lr},
            {"samples_per_s", r.samples_per_s},
            {"data_wait_fraction", r.data_wait_fraction},
            {"step_time_s", r.step_time_s}};
  if (r.loss_scale) f["loss_scale"] = *r.loss_scale;
  if (r.skipped_steps) f["skipped_steps"] = *r.skipped_steps;
  if (!r.gpus.empty()) {
    json gpus = json::array();
    for (const auto& g : r.gpus) gpus.push_back(to_json(g));
    f["gpus"] = std::move(gpus);
  }
  return {"step", std::move(f)};
}

Event to_event(const EvalRecord& r) {
  json f = {{"step", r.step}, {"loss", finite_or_null(r.loss)}, {"best_loss", finite_or_null(r.best_loss)}};
  if (r.accuracy) f["accuracy"] = *r.accuracy;
  return {"eval", std::move(f)};
}

Event to_event(const CheckpointRecord& r) { return {"checkpoint", {{"step", r.step}, {"path", r.path}, {"reason", r.reason}}}; }

Event to_event(const AdviceRecord& r) {
  json f = {{"kind", r.kind}, {"message", r.message}, {"data_wait_fraction", r.data_wait_fraction},
            {"suggest_tensor_dataset", r.suggest_tensor_dataset}};
  if (r.suggested_workers) f["suggested_workers"] = *r.suggested_workers;
  if (r.gpu_util_percent) f["gpu_util_percent"] = *r.gpu_util_percent;
  return {"advice", std::move(f)};
}

Event to_event(const DoneRecord& r) {
  json f = {{"step", r.step}, {"epoch", r.epoch}, {"reason", r.reason}, {"param_hash", r.param_hash}, {"elapsed_s", r.elapsed_s}};
  if (r.final_loss) f["final_loss"] = finite_or_null(*r.final_loss);
  if (r.eval_loss) f["eval_loss"] = finite_or_null(*r.eval_loss);
  return {"done", std::move(f)};
}

Event to_event(const ErrorRecord& r) {
  json f = {{"stage", r.stage}, {"message", r.message}};
  if (r.pointer) f["pointer"] = *r.pointer;
  return {"error", std::move(f)};
}

std::string event_line(const Event& event, double unix_time) {
  json line = {{"event", event.type}, {"time", unix_time}};
  if (event.fields.is_object()) {
    for (const auto& [k, v] : event.fields.items()) {
      if (k != "event" && k != "time") line[k] = v;
    }
  }
  sanitize(line);
  // Invalid UTF-8 in a message (a path, a child's output) must not abort the run.
  return line.dump(-1, ' ', false, json::error_handler_t::replace);
}

Expected<MetricsCsv, std::string> MetricsCsv::open(const std::filesystem::path& file, bool append) {
  std::error_code ec;
  const bool has_rows = append && std::filesystem::exists(file, ec) && std::filesystem::file_size(file, ec) > 0;
  std::FILE* f = std::fopen(file.c_str(), append ? "ab" : "wb");
  if (f == nullptr) return Unexpected("cannot open " + file.string() + " for writing");
  if (!has_rows) {
    std::string header;
    for (const char* c : kColumns) {
      if (!header.empty()) header += ',';
      header += c;
    }
    header += '\n';
    std::fwrite(header.data(), 1, header.size(), f);
    std::fflush(f);
  }
  return MetricsCsv(f);
}

MetricsCsv::MetricsCsv(MetricsCsv&& o) noexcept : file_(std::exchange(o.file_, nullptr)) {}
MetricsCsv& MetricsCsv::operator=(MetricsCsv&& o) noexcept {
  if (this != &o) {
    if (file_ != nullptr) std::fclose(file_);
    file_ = std::exchange(o.file_, nullptr);
  }
  return *this;
}
MetricsCsv::~MetricsCsv() {
  if (file_ != nullptr) std::fclose(file_);
}

void MetricsCsv::add(const Event& event) {
  if (file_ == nullptr || (event.type != "step" && event.type != "eval")) return;
  const json& f = event.fields;
  json row = json::object();
  row["step"] = f.value("step", json());
  if (event.type == "step") {
    for (const char* k : {"epoch", "loss", "lr", "samples_per_s", "data_wait_fraction", "step_time_s"}) row[k] = f.value(k, json());
    // The first GPU's readings: the one this rank trains on.
    if (f.contains("gpus") && f["gpus"].is_array() && !f["gpus"].empty()) {
      const json& g = f["gpus"][0];
      row["gpu_util_percent"] = g.value("util_percent", json());
      row["gpu_mem_used_bytes"] = g.value("mem_used_bytes", json());
      row["gpu_power_w"] = g.value("power_w", json());
      row["gpu_temp_c"] = g.value("temp_c", json());
    }
  } else {
    row["eval_loss"] = f.value("loss", json());
    row["eval_accuracy"] = f.value("accuracy", json());
  }
  std::string line;
  bool first = true;
  for (const char* c : kColumns) {
    if (!first) line += ',';
    first = false;
    if (row.contains(c)) line += csv_number(row[c]);
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

TelemetryWriter::~TelemetryWriter() {
  if (events_ != nullptr) std::fclose(events_);
}

Expected<void, std::string> TelemetryWriter::open_output(const std::filesystem::path& dir, bool append) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Unexpected("cannot create " + dir.string() + ": " + ec.message());
  std::FILE* events = std::fopen((dir / "events.jsonl").c_str(), append ? "ab" : "wb");
  if (events == nullptr) return Unexpected("cannot open " + (dir / "events.jsonl").string());
  auto csv = MetricsCsv::open(dir / "metrics.csv", append);
  if (!csv) {
    std::fclose(events);
    return Unexpected(csv.error());
  }
  if (events_ != nullptr) std::fclose(events_);
  events_ = events;
  csv_ = std::move(*csv);
  dir_ = dir;
  return {};
}

void TelemetryWriter::emit(const Event& event) {
  const std::string line = event_line(event, now_unix()) + "\n";
  for (std::FILE* f : {out_, events_}) {
    if (f == nullptr) continue;
    std::fwrite(line.data(), 1, line.size(), f);
    std::fflush(f);
  }
  if (csv_) csv_->add(event);
  const json& f = event.fields;
  auto number = [&](const char* key) {
    const auto it = f.find(key);
    if (it == f.end() || !it->is_number()) return std::nan("");
    return it->get<double>();
  };
  if (event.type == "step") {
    plot_.train.push_back({number("step"), number("loss"), number("samples_per_s")});
  } else if (event.type == "eval") {
    plot_.eval.push_back({number("step"), number("loss")});
  }
}

Expected<void, std::string> TelemetryWriter::write_plot() const {
  if (dir_.empty()) return Unexpected("no output directory");
  return write_svg_plot(dir_ / "plot.svg", plot_);
}

}  // namespace ferry::train

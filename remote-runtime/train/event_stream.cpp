// Event output routing: which writer a process gets depends on its rank.
#include "remote-runtime/train/event_stream.hpp"

#include <cstdio>

namespace ferry::train {

EventStream::EventStream() : writer_(std::make_unique<TelemetryWriter>(stdout)) {}

void EventStream::set_stdout(bool on) {
  if (on == stdout_) return;
  stdout_ = on;
  writer_ = std::make_unique<TelemetryWriter>(on ? stdout : nullptr);
}

void EventStream::open_output(const std::filesystem::path& output_dir, bool append) {
  if (auto r = writer_->open_output(output_dir, append); !r) {
    std::fprintf(stderr, "ferry-train: cannot write outputs in %s: %s\n", output_dir.c_str(), r.error().c_str());
  }
}

void EventStream::emit(const Event& event) {
  writer_->emit(event);
  if (!stdout_ && event.type == "error") {
    const auto line = event_line(event, 0.0);
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

void EventStream::write_plot() {
  if (!stdout_) return;  // only rank 0 has an output directory
  if (auto r = writer_->write_plot(); !r) std::fprintf(stderr, "ferry-train: plot.svg: %s\n", r.error().c_str());
}

}  // namespace ferry::train

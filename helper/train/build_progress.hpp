// The box's trainer build as progress: reads build.sh's output lines (its "ferry-box:" lines,
// Ninja's "[N/M]" and Make's "Building CXX object") and estimates what is left from the
// translation units done so far (the torch ones dominate, so the estimate settles after a few).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ferry::training {

struct BuildProgress {
  std::string stage;      // "upload", "waiting", "configure", "compile", "install", "ready", "failed"
  int done = 0;           // build steps finished (Ninja) or translation units started (Make)
  int total = 0;          // 0 until known
  std::optional<double> eta_seconds;
  double elapsed_seconds = 0;
  std::string message;    // one line for a bar or $/progress
  int percent() const { return total > 0 ? std::min(100, done * 100 / total) : 0; }
};

class BuildProgressParser {
 public:
  using Clock = std::chrono::steady_clock;
  explicit BuildProgressParser(Clock::time_point start = Clock::now()) : start_(start) {}

  // True when the progress changed (a new stage or one more unit).
  bool feed(std::string_view line, Clock::time_point now = Clock::now());
  const BuildProgress& progress() const { return progress_; }
  // The path after "ferry-box: ready", once seen.
  const std::string& ready_path() const { return ready_; }
  // A one-line bar: "building ferry-train [#####     ] 12/29, about 1:20 left".
  std::string bar(std::size_t width) const;

 private:
  void set_stage(std::string stage, Clock::time_point now);
  Clock::time_point start_;
  std::optional<Clock::time_point> compile_start_;
  BuildProgress progress_;
  std::string ready_;
  int units_ = 0;  // from "ferry-box: units N" (Make's fallback total)
};

}  // namespace ferry::training

// ferry-train's JSON-lines events as the helper sees them (docs/train-events.md): splitting the
// run's stdout bytes into lines, parsing one line, and the IDE's `train/metrics` params.
#pragma once

#include <expected>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ferry::training {

struct TrainEvent {
  std::string kind;     // the "event" field: start, step, eval, checkpoint, done, error, ...
  nlohmann::json body;  // the whole line, "event" included
};

// One line of ferry-train's stdout. Anything that is not a JSON object with a string "event"
// is an error (the caller shows such a line as it is).
std::expected<TrainEvent, std::string> parse_train_event(std::string_view line);

// Output records arrive in pieces that need not end at a newline; this hands out whole lines
// (without the newline) and keeps the rest for the next piece.
class LineSplitter {
 public:
  // Lines longer than this are handed out in pieces rather than buffered without bound.
  static constexpr std::size_t kMaxLine = 4u << 20;

  void feed(std::string_view bytes, const std::function<void(std::string_view)>& on_line);
  // The unterminated tail, handed out once the stream has ended.
  void finish(const std::function<void(std::string_view)>& on_line);

 private:
  std::string pending_;
};

// `train/metrics` notification params: {runId, event}.
nlohmann::json metrics_params(std::string_view run_id, const TrainEvent& event);

}  // namespace ferry::training

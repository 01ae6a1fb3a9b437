// Parsing ferry-train's event lines; see train_event.hpp.
#include "helper/train/train_event.hpp"

#include "protocol/json_parse.hpp"

namespace ferry::training {

std::expected<TrainEvent, std::string> parse_train_event(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  if (line.empty()) return std::unexpected("empty line");
  auto parsed = protocol::parse_json_text(line);
  if (!parsed) return std::unexpected("not JSON");
  nlohmann::json& j = *parsed;
  if (!j.is_object()) return std::unexpected("not a JSON object");
  auto it = j.find("event");
  if (it == j.end() || !it->is_string() || it->get_ref<const std::string&>().empty())
    return std::unexpected("no \"event\" string");
  TrainEvent e;
  e.kind = it->get<std::string>();
  e.body = std::move(j);
  return e;
}

void LineSplitter::feed(std::string_view bytes, const std::function<void(std::string_view)>& on_line) {
  while (!bytes.empty()) {
    const auto nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      pending_.append(bytes);
      if (pending_.size() >= kMaxLine) {
        on_line(pending_);
        pending_.clear();
      }
      return;
    }
    if (pending_.empty()) {
      on_line(bytes.substr(0, nl));
    } else {
      pending_.append(bytes.substr(0, nl));
      on_line(pending_);
      pending_.clear();
    }
    bytes.remove_prefix(nl + 1);
  }
}

void LineSplitter::finish(const std::function<void(std::string_view)>& on_line) {
  if (!pending_.empty()) on_line(pending_);
  pending_.clear();
}

nlohmann::json metrics_params(std::string_view run_id, const TrainEvent& event) {
  return {{"runId", std::string(run_id)}, {"event", event.body}};
}

}  // namespace ferry::training

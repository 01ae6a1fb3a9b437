// News for the connected helper: every line the spot watcher and the autostop watchdog append to
// their events.jsonl (STATE/spot/, STATE/autostop/) while this agent serves becomes one
// `cloud/event` notification {source: "spot" | "autostop", event: {event, at, ...}}. Those
// watchers are processes of their own (they outlive the agent), so the agent follows their files
// with inotify instead of being told. Lines from before the agent started are history
// (`ferry spot --status`, `ferry autostop --status`), not news.
#pragma once

#include <filesystem>
#include <functional>
#include <cstdint>
#include <thread>

#include <nlohmann/json.hpp>

namespace ferry::agent::autostop {

class CloudEventTail {
 public:
  using Send = std::function<void(const nlohmann::json& params)>;
  // Starts following at the files' current ends; `send` runs on the tail's own thread.
  CloudEventTail(std::filesystem::path state_dir, Send send);
  ~CloudEventTail();
  CloudEventTail(const CloudEventTail&) = delete;
  CloudEventTail& operator=(const CloudEventTail&) = delete;

 private:
  void loop(std::uintmax_t spot_offset, std::uintmax_t autostop_offset);
  std::filesystem::path state_dir_;
  Send send_;
  int inotify_ = -1;
  int stop_[2] = {-1, -1};
  std::jthread thread_;
};

}  // namespace ferry::agent::autostop

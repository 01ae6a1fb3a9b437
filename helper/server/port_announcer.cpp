// PortAnnouncer (port_announcer.hpp).
#include "helper/server/port_announcer.hpp"

#include <spdlog/spdlog.h>

namespace ferry::server {

namespace {
constexpr const char* kOpen = "Open in Browser";
}

PortAnnouncer::~PortAnnouncer() {
  cancel_.cancel();
  std::vector<std::thread> asking;
  {
    std::lock_guard lock(mutex_);
    asking.swap(asking_);
  }
  for (auto& t : asking) t.join();
}

void PortAnnouncer::announce(const run::PortEvent& e, const std::optional<run::PortForward>& f, const std::string& error) {
  std::string line = run::describe_port_event(e, f, error);
  if (line.starts_with("ferry: ")) line.insert(7, what_ + ": ");
  // ferry's own clients redraw their tunnel lists (VS Code's Tunnels view) on this.
  if (ctx_.questions.traits().ferry && (f || !e.open)) ctx_.client.notify("tunnel/changed", protocol::json::object());
  if (!e.open || !f) {
    ctx_.questions.log(f || !e.open ? MessageType::info : MessageType::warning, line);
    return;
  }
  std::lock_guard lock(mutex_);
  if (cancel_.cancelled()) return;
  asking_.emplace_back([this, line, url = f->url] { offer_browser(line, url); });
}

void PortAnnouncer::offer_browser(const std::string& message, const std::string& url) {
  auto choice = ctx_.questions.choose(MessageType::info, message, {kOpen}, cancel_.token());
  if (!choice || *choice != kOpen) return;
  // LSP4IJ reads `selection` without a null check, even for an external document.
  auto shown = ctx_.client.call("window/showDocument",
                                protocol::json{{"uri", url},
                                               {"external", true},
                                               {"selection", {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 0}, {"character", 0}}}}}},
                                std::chrono::seconds(10), cancel_.token());
  if (!shown) spdlog::info("{}: the editor did not open it: {}", url, shown.error().message);
}

}  // namespace ferry::server

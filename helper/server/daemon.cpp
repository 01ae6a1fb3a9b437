// DaemonState (daemon.hpp) and Server::serve_headless: the daemon's life.
#include "helper/server/daemon.hpp"

#include <spdlog/spdlog.h>

#include "helper/server/project_lookup.hpp"
#include "helper/server/server.hpp"
#include "helper/server/server_state.hpp"

namespace ferry::server {

namespace fs = std::filesystem;

void DaemonState::activate(std::chrono::seconds idle) {
  std::lock_guard lock(mutex_);
  active_ = true;
  idle_ = idle;
  last_use_ = Clock::now();
}

bool DaemonState::active() const {
  std::lock_guard lock(mutex_);
  return active_;
}

void DaemonState::connection_began() {
  std::lock_guard lock(mutex_);
  ++connections_;
}

void DaemonState::connection_ended() {
  {
    std::lock_guard lock(mutex_);
    --connections_;
    last_use_ = Clock::now();
  }
  cv_.notify_all();
}

void DaemonState::drain(std::chrono::milliseconds limit) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, limit, [this] { return connections_ == 0; });
}

void DaemonState::stop(const std::string& why) {
  {
    std::lock_guard lock(mutex_);
    if (!stopped_) stopped_ = why;
  }
  cv_.notify_all();
}

std::optional<long long> DaemonState::idle_seconds() const {
  std::lock_guard lock(mutex_);
  if (!active_) return std::nullopt;
  return idle_.count();
}

std::string DaemonState::wait(const std::function<std::string()>& check) {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (stopped_) return *stopped_;
    if (connections_ == 0 && Clock::now() - last_use_ >= idle_) return "idle for " + std::to_string(idle_.count()) + " s";
    cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopped_.has_value(); });
    if (stopped_) return *stopped_;
    lock.unlock();
    std::string why = check ? check() : "";
    lock.lock();
    if (!why.empty()) return why;
  }
}

int Server::serve_headless(std::chrono::seconds idle, const std::function<bool()>& signalled) {
  auto& s = *state_;
  s.daemon.activate(idle);
  auto config = lookup_project(std::nullopt, s.workspace);
  if (!config) {
    spdlog::error("ferry daemon: {}", config.error().message);
    return 2;
  }
  if (auto holder = s.sessions.claims().claim(config->root)) {
    spdlog::warn("ferry daemon: {} is served by {} already", config->root.string(), *holder);
    return 0;
  }
  auto link = s.sessions.link(*config);
  if (!link) {
    spdlog::error("ferry daemon: cannot link {}: {}", config->root.string(), link.error().message);
    return 1;
  }
  s.daemon.activate(idle);  // the idle time counts from here, not from before the connect
  spdlog::info("ferry daemon: serving {} over {} (idle exit after {} s)", config->root.string(), (*link)->endpoint().description(),
               idle.count());
  const fs::path project_file = config->root / "ferry.json";
  const std::string why = s.daemon.wait([&]() -> std::string {
    std::error_code ec;
    if (!fs::exists(project_file, ec)) return project_file.string() + " is gone";
    if (signalled && signalled()) return "a signal";
    return "";
  });
  spdlog::info("ferry daemon: exiting ({})", why);
  s.daemon.drain(std::chrono::seconds(2));  // ferry/stop's answer reaches its asker before the socket closes
  {
    std::lock_guard lock(s.sockets_mutex);
    s.sockets.clear();  // no command starts on a link about to close
  }
  s.sessions.close_all();
  return 0;
}

}  // namespace ferry::server

// The autostop watchdog: `ferry-agent --autostop-watch STATE_DIR`, a hidden mode of the agent
// binary, double-forked like the run supervisor so it outlives the agent, the SSH channel and the
// laptop's lid. One per state dir (an flock on watchdog.lock). It polls: live runs, connected
// helpers, GPU utilization; once all have been quiet for idleSeconds it records the event, runs
// preStop, checks once more that nothing started meanwhile, posts the webhook notice (when it
// holds a URL), runs the action and disarms. A re-arm hands over to a new watchdog (its id in
// settings.json), which takes the URL given with that arm, in memory only.
#pragma once

#include <optional>
#include <span>

#include "remote-runtime/agent/autostop/autostop_state.hpp"
#include "remote-runtime/agent/autostop/autostop_webhook.hpp"

namespace ferry::agent::autostop {

// Agent side: starts a watchdog for `p` if settings are armed, with the id in the settings. Without
// `take_over` a running one keeps its lock and the new one exits at once (an agent restart); with
// it (a fresh arm) the new one waits for the old one, which sees the new id and exits. `hook`
// reaches the new watchdog through a pipe on its stdin: never argv, environment or a file.
// False when a pipe or fork failed.
bool ensure_watchdog(const Paths& p, const std::optional<Webhook>& hook = std::nullopt, bool take_over = false);
// True while a watchdog holds the lock.
bool watchdog_running(const Paths& p);

// The watchdog's options after `--autostop-watch STATE_DIR`: --id ID, --take-over, --webhook-stdin.
struct WatchOptions {
  std::string id;
  bool take_over = false;
  bool webhook_stdin = false;
};
WatchOptions parse_watch_options(std::span<char* const> args);

// Watchdog side; returns its exit status. `gpu_util` defaults to NVML.
int watch(const fs::path& state_dir, const WatchOptions& options = {}, GpuUtil gpu_util = {});

// How often the watchdog looks: a tenth of the idle time, between 0.2 s and 10 s.
std::chrono::milliseconds poll_interval(double idle_seconds);

}  // namespace ferry::agent::autostop

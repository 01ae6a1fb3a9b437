// The autostop watchdog: `ferry-agent --autostop-watch STATE_DIR`, a hidden mode of the agent
// binary, double-forked like the run supervisor so it outlives the agent, the SSH channel and the
// laptop's lid. One per state dir (an flock on watchdog.lock). It polls: live runs, connected
// helpers, GPU utilization; once all have been quiet for idleSeconds it records the event, runs
// preStop, checks once more that nothing started meanwhile, runs the action and disarms.
#pragma once

#include "remote-runtime/agent/autostop/autostop_state.hpp"

namespace ferry::agent::autostop {

// Agent side: starts a watchdog for `p` if settings are armed (a running one keeps its lock and
// the new one exits at once). False when fork failed.
bool ensure_watchdog(const Paths& p);
// True while a watchdog holds the lock.
bool watchdog_running(const Paths& p);

// Watchdog side; returns its exit status. `gpu_util` defaults to NVML.
int watch(const fs::path& state_dir, GpuUtil gpu_util = {});

// How often the watchdog looks: a tenth of the idle time, between 0.2 s and 10 s.
std::chrono::milliseconds poll_interval(double idle_seconds);

}  // namespace ferry::agent::autostop

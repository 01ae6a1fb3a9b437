// The run supervisor: `ferry-agent --supervise RUNDIR`, a hidden mode of the agent binary.
// The agent double-forks it (setsid, every inherited fd closed) so it is nobody's child that
// cares, survives the agent, the SSH channel and sshd's SIGHUP, and never keeps the agent's
// stdio open. It starts the command in its own process group, relays the stdin FIFO, appends
// output records and writes exit.json.
#pragma once

#include <chrono>
#include <expected>
#include <filesystem>
#include <string>

#include "remote-runtime/agent/run/run_store.hpp"

namespace ferry::agent::run {

// The supervisor reports the started command (or why it failed) on this fd, then closes it.
inline constexpr int kReportFd = 3;

struct LaunchReport {
  long long pid = 0;
  long long pgid = 0;
  long long supervisor_pid = 0;
};

struct LaunchError {
  std::string message;
  bool supervisor_gone = true;  // false after a timeout: it may still start the run
};

// Agent side. The run's spec.json must be written; waits up to `timeout` for the report.
std::expected<LaunchReport, LaunchError> launch_supervisor(const RunFiles& run, std::chrono::milliseconds timeout);

// Supervisor side; returns the supervisor's exit status.
int supervise(const fs::path& run_dir);

}  // namespace ferry::agent::run

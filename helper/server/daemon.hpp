// The daemon: a `ferry serve` with no editor, for a project no editor serves, so that the next
// terminal command rides a warm link (as `ssh -o ControlPersist` keeps a master). A ferry command
// that made its own link starts one when it is done (helper/cli/daemon_command.cpp); it claims the
// project (ServeClaims), links it (no questions: nobody could answer them; an unknown host key or
// an encrypted key without ssh-agent ends it) and serves the project socket until it is idle for
// its idle time, is told to stop (ferry/stop: `ferry daemon stop`, or an editor's server taking
// the project over), the project's ferry.json goes, or a signal. Then it closes the link and
// exits; runs on the box go on, as after a killed CLI.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace ferry::server {

// What decides a daemon's life, and what the socket's connections tell it. Inactive (an editor's
// server): the counts are kept, nothing else happens.
class DaemonState {
 public:
  using Clock = std::chrono::steady_clock;

  void activate(std::chrono::seconds idle);
  bool active() const;
  // A terminal command's connection began or ended (ProjectSocket's serve function).
  void connection_began();
  void connection_ended();
  // ferry/stop or a signal: the loop ends at once; the first reason is kept.
  void stop(const std::string& why);
  // The idle time (none when inactive): a command's own connection counts as use, so what is
  // left of it is the whole of it once that command ends.
  std::optional<long long> idle_seconds() const;
  // Waits until stopped (the reason), idle past the idle time ("idle"), or `check` says why to
  // end ("" = go on; asked about once a second).
  std::string wait(const std::function<std::string()>& check);
  // After wait(): until the open connections ended (the one that said ferry/stop reads its
  // answer, then goes), at most `limit`.
  void drain(std::chrono::milliseconds limit);

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool active_ = false;
  std::chrono::seconds idle_{0};
  int connections_ = 0;
  Clock::time_point last_use_ = Clock::now();
  std::optional<std::string> stopped_;
};

}  // namespace ferry::server

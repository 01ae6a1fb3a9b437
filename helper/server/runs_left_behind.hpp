// Runs a ferry that is gone left going on the box (PyCharm's second Stop kills ferry, a laptop
// closed with a terminal open, `ferry run --detach`): after each connect the person is told of
// those under the project that no live ferry follows, once per run, with what to do about each.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "helper/run/run_client.hpp"

namespace ferry::server {

struct ServerState;
class ProjectLink;

// The running runs no ferry follows (as the agent says: an agent that does not say gives none),
// newest first.
std::vector<run::RunInfo> runs_left_behind(const std::vector<run::RunInfo>& runs);

// The runs already named in this server: a reconnect does not ask again.
class LeftBehindOffers {
 public:
  bool first_time(const std::string& run_id);

 private:
  std::mutex mutex_;
  std::set<std::string> offered_;
};

// Asks about each of `left` (runs_left_behind's): Show Output (LSP clients: the output mirrored
// into .ferry/logs and opened; VS Code's Runs view attaches on its own), Stop It (SIGTERM) or
// Leave It Running. Meant for the link's background work: returns soon after `stop`.
void offer_runs_left_behind(ServerState& s, ProjectLink& link, LeftBehindOffers& offers,
                            const std::vector<run::RunInfo>& left, std::stop_token stop);

}  // namespace ferry::server

// Starting another mode of this agent's own binary (a run supervisor, the autostop watchdog, the
// spot watcher) detached from the agent: it must outlive the agent and its SSH session.
#pragma once

#include <string>
#include <vector>

namespace ferry::agent::run {

struct DetachedAgent {
  std::vector<std::string> argv;  // argv[0] is the name `ps` shows
  std::string log;                // its stderr, appended (created 0600)
  int stdin_fd = -1;              // its stdin; -1: /dev/null
  int pass_fd = -1;               // an fd it keeps, as `pass_as` (the supervisor's report pipe)
  int pass_as = -1;
};

// Double-forks (the agent never reaps it; its parent is gone at once), starts a session, leaves
// the agent's cwd and execs /proc/self/exe with `argv` ($FERRY_AGENT_SELF instead, when an agent
// started through a wrapper names it: under an emulator such as qemu-user, /proc/self/exe is a
// binary the kernel cannot start by itself). No fd of the agent's survives but stdio
// and `pass_as`: its stdio is the SSH channel, which a copy would hold open forever. Waits only
// for the intermediate child; false when a fork failed.
bool spawn_detached_agent(const DetachedAgent& d);

// The file this agent runs from, as spawn_detached_agent starts it: $FERRY_AGENT_SELF when set to an
// absolute path, else /proc/self/exe.
const char* agent_self_path();

}  // namespace ferry::agent::run

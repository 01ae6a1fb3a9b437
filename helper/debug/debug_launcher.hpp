// Starting a script under debugpy on the box and the tunnel to it, over an Endpoint and a
// RunClient: the part `ferry debug` and debug/prepare share. Returns once debugpy listens and
// the tunnel is open; following the run's output is the caller's business.
#pragma once

#include <chrono>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/wakeup.hpp"
#include "helper/debug/attach_configuration.hpp"
#include "helper/debug/debugpy_command.hpp"
#include "helper/deploy/project_config.hpp"
#include "helper/remote/endpoint.hpp"
#include "helper/run/run_client.hpp"
#include "helper/run/run_exit.hpp"

namespace ferry::debug {

// Where the project lives on the box.
struct DebugTarget {
  deploy::ProjectConfig project;
  std::string remote_base;        // the first mapping's directory under the agent's root ("" = the root)
  std::string first_remote_root;  // the first mapping's root on the box, absolute
  // A Slurm project's running allocation and its node: the debuggee is an srun step there (a run
  // of the login node's like any other), and the tunnel goes through an agent in the job
  // (remote::JobEndpoint). A Slurm project without one would debug on the login node: refused.
  std::string allocation;
  std::string allocation_node;
};

struct DebugRequest {
  std::vector<std::string> command;  // script and args, or -m MODULE ..., or -c CODE
  int port = kDefaultDebugpyPort;    // debugpy's port on the box
  std::optional<int> local_port;     // the tunnel's port here; default: `port`; 0: any free one
  std::vector<std::string> env;      // K=V, over ferry.json's env
  std::string cwd;                   // relative to the mapping root
  std::chrono::seconds wait{30};     // for debugpy to listen
  AttachOptions attach;              // its port is set to the tunnel's
  platform::Wakeup* interrupt = nullptr;  // raised: give up (Ctrl-C), killing the run
};

enum class DebugErrorKind {
  usage,           // bad request (no command, bad env, bad cwd)
  no_debugpy,      // debugpy not importable: message is the install advice
  failure,         // ferry's own: agent refused, tunnel failed, debugpy never listened
  debuggee_ended,  // the run ended before anyone attached (its output says why)
  interrupted,
};

struct DebugError {
  DebugErrorKind kind = DebugErrorKind::failure;
  std::string message;
  std::optional<std::string> run_id;
  std::optional<run::RunExit> exit;  // debuggee_ended
};

struct DebugLaunch {
  std::string run_id;
  remote::ForwardInfo forward;
  nlohmann::json configuration;  // VS Code attach, absolute local roots
  std::vector<PathMapping> mappings;
  std::string debugpy_version;
};

// Runs through `client`; `tunnels` opens the tunnel to debugpy (the same link, or for a Slurm
// allocation the agent in the job).
std::expected<DebugLaunch, DebugError> launch_under_debugpy(remote::Endpoint& tunnels, run::RunClient& client,
                                                           const DebugTarget& target, const DebugRequest& request);

// The run/start params for `args` run with the project's interpreter, env, PYTHONPATH and cwd.
std::expected<run::RunSpec, std::string> debug_run_spec(const DebugTarget& target, const DebugRequest& request,
                                                        std::vector<std::string> args);

}  // namespace ferry::debug

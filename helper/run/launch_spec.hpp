// What a run is started with: the user's command turned into the agent's run/start params
// (interpreter prepended for scripts, env merged, cwd checked), as pure functions.
#pragma once

#include <expected>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/jsonrpc.hpp"
#include "protocol/shell_words.hpp"
#include "protocol/slurm_job.hpp"

namespace ferry::run {

using protocol::json;

// Everything the user and the project said about a run.
struct LaunchRequest {
  std::vector<std::string> command;              // what followed `--`
  std::string interpreter = "python3";           // ferry.json interpreter; may carry args ("python -u")
  std::map<std::string, std::string> config_env; // ferry.json env
  std::vector<std::string> cli_env;              // --env K=V, in order; later ones win
  std::string cwd;                               // --cwd, relative to the mapping root ("" = the root)
  std::string remote_base;                       // the mapping dir under the agent's root ("" = the root)
  std::string mapping_root;                      // the mapping root as an absolute path on the box
  bool tty = false;
  int cols = 0, rows = 0;
  std::optional<protocol::SlurmJobOptions> slurm;  // ferry.json's `slurm`: the run is a Slurm job
  // Or a step of this running allocation (`ferry alloc`): srun on the login node starts it on the
  // job's node at once, and the run is the login node's like any other.
  std::string allocation;
  std::string allocation_node;  // its node the step runs on ("" = Slurm's choice)
};

// The agent's run/start params.
struct RunSpec {
  std::vector<std::string> argv;
  std::string cwd = ".";  // relative to the agent's root
  std::map<std::string, std::string> env;
  bool tty = false;
  int cols = 0, rows = 0;
  std::optional<protocol::SlurmJobOptions> slurm;
  json to_json() const;
};

// The one splitting rule for settings (protocol/shell_words.hpp): no shell, no expansions.
using protocol::split_words;

// The argv to run: a script (argv[0] ending in .py) or a leading `-m`/`-c` gets the interpreter
// in front; a bare `python`/`python3` is replaced by the interpreter; anything else runs as given.
// The interpreter is split by protocol::interpreter_words (no shell named in it).
std::expected<std::vector<std::string>, std::string> resolve_argv(const std::vector<std::string>& command,
                                                                  std::string_view interpreter);

// A relative path that stays inside its root lexically: no absolute path, no `..` step.
std::expected<std::string, std::string> normalize_relative(std::string_view path);

std::expected<RunSpec, std::string> make_run_spec(const LaunchRequest& request);

}  // namespace ferry::run

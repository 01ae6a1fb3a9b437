// What the project's interpreter on the box says about itself, in one round trip: Python version,
// platform, sys.path (each entry marked stdlib or site), installed distributions with versions
// (importlib.metadata) and torch/CUDA versions. `env/info`, `ferry env` and `ferry env sync` (which
// needs sys.path) all start here. The probe is a short Python script run by the interpreter
// over the link's exec channel (or locally for host "local"); its answer is one marked JSON line,
// so login banners and .bashrc noise around it do not matter.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/error.hpp"

namespace ferry::remote {
class Endpoint;
}

namespace ferry::env {

struct SysPathEntry {
  std::string path;  // absolute, symlinks resolved, on the box
  std::string kind;  // "stdlib" (the interpreter's own library) or "site" (packages)
};

struct Distribution {
  std::string name;
  std::string version;
};

struct EnvInfo {
  std::string interpreter;   // as ferry.json names it
  std::string executable;    // sys.executable
  std::string python;        // "3.11.2"
  std::string implementation;
  std::string platform;      // platform.platform()
  std::string machine;       // "x86_64"
  std::vector<SysPathEntry> sys_path;
  std::vector<Distribution> distributions;  // sorted by name
  std::optional<std::string> torch;         // torch.__version__, when it imports
  std::optional<std::string> torch_cuda;    // torch.version.cuda ("" for a CPU build)
  bool cuda_available = false;
  int cuda_devices = 0;
  std::string torch_error;  // why torch did not import ("" when it did, or is not installed)
};

nlohmann::json to_json(const EnvInfo& info);
std::expected<EnvInfo, std::string> env_info_from_json(const nlohmann::json& j);

// The argv that runs the probe with `interpreter` ("python3", "/opt/conda/bin/python -I",
// "~/venv/bin/python"), split by protocol::interpreter_words (no shell; the error says why the
// setting cannot be run). `with_torch`: also import torch for its versions (slow: seconds on a
// GPU box), which env sync does not need.
std::expected<std::vector<std::string>, std::string> probe_argv(const std::string& interpreter, bool with_torch);

// The same argv as a command line for the SSH exec channel: `cd / &&` and each word quoted
// (protocol::shell_quote_home: a leading "~/" is the box's home, nothing else expands).
std::expected<std::string, std::string> probe_command(const std::string& interpreter, bool with_torch);

// The probe's output (stdout) to EnvInfo: the line after the marker, whatever surrounds it.
std::expected<EnvInfo, std::string> parse_probe_output(const std::string& stdout_text, const std::string& interpreter);

// Runs the probe on the endpoint's box: over SSH through the link's exec channel, on host
// "local" as a local process. The error says what to fix: invalid_project when the interpreter
// ferry.json names is missing or no Python 3 (parse_probe_output's reasons, wrapped), the
// link's kind when the exec failed (agent_lost: the link is down), io when no process starts.
std::expected<EnvInfo, Error> probe_env(remote::Endpoint& endpoint, const std::string& interpreter, bool with_torch,
                                       std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace ferry::env

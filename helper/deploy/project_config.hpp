// The project config (ferry.json): what it holds, how it is found, and its validation.
// Errors name the JSON pointer of the bad field and what was expected there.
#pragma once

#include <expected>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "helper/cloud/cost_estimate.hpp"
#include "helper/cloud/gpu_catalog.hpp"
#include "protocol/mapping_root.hpp"
#include "protocol/slurm_job.hpp"

namespace ferry::deploy {

inline constexpr const char* kProjectFileName = "ferry.json";

// One deployment mapping: a folder of the project (relative to the project root) and where it
// lives on the remote. The remote path may start with "~/"; for the `local` host it is under the
// local sandbox root.
struct Mapping {
  std::string local = ".";
  std::string remote;
};

// A tunnel opened on connect: "local" forwards 127.0.0.1:local_port to remote_host:remote_port
// on the remote; "reverse" forwards the remote's 127.0.0.1:remote_port to local_port here.
struct TunnelSpec {
  std::string name;
  std::string kind = "local";
  int local_port = 0;
  std::string remote_host = "127.0.0.1";
  int remote_port = 0;
};

// Ports a run opens on the box forward themselves (helper/run/port_forwarder.hpp): ferry.json's
// "autoForwardPorts": true (the default), false, or the list of ports that may.
struct AutoForwardPorts {
  bool enabled = true;
  std::vector<int> ports;  // empty: any
};

// Acted on by the agent's watchdog (remote-runtime/agent/autostop/): ferry serve arms it with this
// block when it connects (and cancels it when enabled is false).
struct AutostopConfig {
  bool enabled = false;
  int idle_minutes = 30;
  std::string action = "stop";  // "stop" | "notify" | "command"
  std::string command;          // action "command": run with /bin/sh -c on the box
  std::string pre_stop;         // optional: run before the action (pull results, upload checkpoints)
  int gpu_util_below = 5;       // percent: the GPUs count as idle under this
};

// One run target of the `launch` list: what `ferry run/debug/train --launch NAME` and the IDE
// configurations `ferry ide` writes start. Kinds "run" and "debug" name exactly one of script or
// module; kind "train" names a ferry-train config instead and takes no args or cwd.
struct LaunchEntry {
  std::string name;
  std::string kind = "run";                 // "run" | "debug" | "train"
  std::optional<std::string> script;        // relative to the project root, inside the first mapping
  std::optional<std::string> module;        // python -m MODULE
  std::optional<std::string> config;        // kind "train": relative to the project root, inside the first mapping
  std::vector<std::string> args;
  std::map<std::string, std::string> env;   // over ferry.json's env
  std::string cwd;                          // relative to the mapping root; "" = the root
};

struct ProjectConfig {
  std::filesystem::path root;    // the directory holding ferry.json (absolute)
  std::string name;              // default: the root's folder name
  std::string host = "local";    // "local", an ssh config alias, or user@host:port
  std::vector<Mapping> mappings; // at least one after validation
  std::vector<std::string> exclude;   // gitignore-syntax patterns
  std::vector<std::string> protect;   // remote-only paths (datasets, outputs): never written or deleted
  std::string interpreter = "python3";
  std::string trainer;  // ferry-train on the box the user built; "" = ferry builds and caches one there
  std::map<std::string, std::string> env;
  std::vector<TunnelSpec> tunnels;
  AutoForwardPorts auto_forward_ports;
  AutostopConfig autostop;
  // The daemon a terminal command leaves for the next (docs/daemon.md): minutes it stays idle;
  // 0 = none for this project; unset = FERRY_DAEMON_IDLE, else the default.
  std::optional<int> daemon_idle_minutes;
  std::optional<cloud::HostPrice> price;  // what the host bills: live run costs
  std::vector<cloud::GpuOffer> gpu_catalog;  // rows added to / overriding the GPU catalog
  std::optional<std::string> ssh_config;  // path to an OpenSSH client config
  std::vector<LaunchEntry> launch;        // names unique
  std::optional<protocol::SlurmJobOptions> slurm;  // the host is a Slurm login node: runs are jobs
};

struct ConfigError {
  std::string file;     // the ferry.json path, when one was read
  std::string pointer;  // JSON pointer of the bad field ("" for the whole document)
  std::string message;  // what was expected there
  std::string to_string() const;  // "FILE: /pointer: message"
};

// `path` (relative to the project root) relative to mapping `m`'s folder instead; nullopt when it
// is outside that folder or is the folder itself.
std::optional<std::string> path_in_mapping(std::string_view path, const Mapping& m);
// Why `remote` (a mapping's remote path, already of the accepted shape) cannot be a mapping root,
// or nullopt when it can; and the same rule as the schema's regular expression. The rule lives in
// protocol/mapping_root.hpp because the agent applies it too, to the root as it resolves on the box.
using protocol::kRefusedRemoteRootPattern;
using protocol::remote_root_refusal;

// Walks up from `start` (a file or directory) to the first directory holding ferry.json, as git
// finds its repository.
std::optional<std::filesystem::path> find_project_file(const std::filesystem::path& start);

// Validates a parsed document. `root` is the project directory the paths are relative to.
std::expected<ProjectConfig, ConfigError> parse_project(const nlohmann::json& doc,
                                                        const std::filesystem::path& root);

// Reads and validates `path` (a ferry.json file, or a directory holding one).
std::expected<ProjectConfig, ConfigError> load_project(const std::filesystem::path& path);

// The config as the IDE sees it (project/load's result).
nlohmann::json to_json(const ProjectConfig& config);

// The starter config `ferry init` writes (an empty remote_root: ~/ferry/<project_name>).
nlohmann::json starter_config(const std::string& host, const std::string& remote_root,
                              const std::string& project_name);

}  // namespace ferry::deploy

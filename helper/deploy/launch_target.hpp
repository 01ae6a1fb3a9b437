// A ferry.json launch entry turned into what a command starts: finding it by name, checking the
// command takes its kind, and the run's command line, cwd and env. Pure functions.
#pragma once

#include <expected>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "helper/deploy/project_config.hpp"

namespace ferry::deploy {

// The entry called `name`; the error lists the names there are (or says there are none).
std::expected<const LaunchEntry*, std::string> find_launch(const ProjectConfig& config, std::string_view name);

// `ferry run` and `ferry debug` take kinds "run" and "debug" (run a debug target plainly, or debug
// a run target); `ferry train` takes kind "train". The error names the command that fits.
// `command` is "run", "debug" or "train".
std::expected<void, std::string> check_launch_kind(const LaunchEntry& entry, std::string_view command);

// What `ferry run/debug --launch NAME [-- EXTRA]` starts, in the terms of `ferry run -- CMD`.
struct LaunchCommand {
  std::vector<std::string> command;        // script (relative to cwd) or -m MODULE, then args, then extra
  std::string cwd;                         // relative to the mapping root ("" = the root)
  std::map<std::string, std::string> env;  // ferry.json's env with the entry's over it
};

// `cwd_override` (--cwd on the command line, "" for none) replaces the entry's cwd; the script's
// path is made relative to whichever cwd wins. Kind "train" entries are refused.
std::expected<LaunchCommand, std::string> launch_command(const ProjectConfig& config, const LaunchEntry& entry,
                                                         const std::vector<std::string>& extra_args,
                                                         std::string_view cwd_override = {});

// ferry.json's env with the entry's over it.
std::map<std::string, std::string> launch_env(const ProjectConfig& config, const LaunchEntry& entry);

// Kind "train": the config file's absolute local path.
std::expected<std::filesystem::path, std::string> train_config_path(const ProjectConfig& config, const LaunchEntry& entry);

}  // namespace ferry::deploy

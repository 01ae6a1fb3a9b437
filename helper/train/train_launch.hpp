// How `ferry train` starts ferry-train on the box and what it brings back: the run's argv and
// cwd (the config's directory, so relative paths in the config mean what they mean locally),
// which ferry-train binary to use, and the outputs to pull (plot, CSV, events, newest checkpoint).
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::training {

struct TrainLaunch {
  std::vector<std::string> argv;  // [binary, CONFIG file name, --resume?]
  std::string cwd;                // relative to the mapping root, "." for the root itself
};

// `config` is the local config file, `mapping_root` the local folder of the mapping it is in.
// Fails when the config is outside the mapping (it would not be synced).
std::expected<TrainLaunch, std::string> make_train_launch(const std::filesystem::path& config,
                                                          const std::filesystem::path& mapping_root,
                                                          const std::string& binary, bool resume);

// The paths to pull, relative to the mapping root: output_dir's plot.svg, metrics.csv and
// events.jsonl, and `checkpoint` (as in the last `checkpoint` event: relative to the run's cwd,
// or absolute) when it lies inside the mapping. `config` is the config file's JSON (only
// output_dir is read; ferry-train's default is ".").
struct TrainOutputs {
  std::string output_dir;          // relative to the mapping root
  std::vector<std::string> files;  // relative to the mapping root
  std::vector<std::string> skipped;  // outside the mapping: cannot be pulled (named in messages)
};
std::expected<TrainOutputs, std::string> train_outputs(const nlohmann::json& config, const std::string& run_cwd,
                                                       const std::optional<std::string>& checkpoint);

// ferry-train for the local host: $FERRY_TRAIN, else next to this executable, else in the build
// tree's remote-runtime/train/ beside its bin/ (where CMake puts it). The error says how to fix it.
std::expected<std::filesystem::path, std::string> find_local_train_binary();

// A relative path joined and normalised lexically; nothing when it leaves its root.
std::optional<std::string> join_inside(const std::string& base, const std::string& path);

}  // namespace ferry::training

// What `ferry ide vscode` writes, as pure functions: a shell task per launch entry in
// .vscode/tasks.json, and for each debug entry an attach configuration in .vscode/launch.json
// (the shape `ferry debug --write-launch-json` writes) that starts its task first and attaches
// once ferry reports debugpy listening. Both are merged with jsonc_merge (comments kept).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "helper/debug/jsonc_merge.hpp"
#include "helper/ide/ide_inputs.hpp"

namespace ferry::ide {

inline constexpr const char* kTasksPath = ".vscode/tasks.json";
inline constexpr const char* kLaunchPath = ".vscode/launch.json";

std::vector<nlohmann::ordered_json> vscode_tasks(const IdeInputs& in);
std::vector<nlohmann::ordered_json> vscode_launch_configurations(const IdeInputs& in);

debug::JsoncMergeRequest tasks_merge(const IdeInputs& in);
debug::JsoncMergeRequest launch_merge(const IdeInputs& in);

}  // namespace ferry::ide

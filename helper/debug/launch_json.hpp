// .vscode/launch.json: merge one configuration into what is there (others kept, one of the same
// name replaced, comments and layout kept: jsonc_merge.hpp) and write the file atomically.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ferry::debug {

struct MergedLaunchJson {
  std::string text;           // the new file's contents
  bool replaced = false;      // a configuration of the same name was replaced (else appended)
};

// `existing` is the current file's text ("" when there is none). VS Code allows comments and
// trailing commas in launch.json; both are kept, as is everything outside the entry replaced.
// Anything that is not a JSON object with a "configurations" array (when present) is an error: we
// never replace a file we cannot read.
std::expected<MergedLaunchJson, std::string> merge_launch_configuration(std::string_view existing,
                                                                       const nlohmann::json& configuration);

struct LaunchJsonWrite {
  std::filesystem::path path;
  bool replaced = false;
};

// Reads <project>/.vscode/launch.json (if any), merges, writes it back atomically (temp file in
// the same directory, fsync, rename), creating .vscode/ when absent.
std::expected<LaunchJsonWrite, std::string> write_launch_configuration(const std::filesystem::path& project_root,
                                                                      const nlohmann::json& configuration);

}  // namespace ferry::debug

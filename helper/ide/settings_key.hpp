// One top-level key of a VS Code settings.json (JSON with comments) set by editing its text:
// `python.defaultInterpreterPath` pointing at the project's .ferry/venv, so VS Code's Python
// extension (and Pylance) resolve the box's packages. Everything else in the file, comments and
// layout included, stays as it is; a value the user set differently is theirs and is kept.
#pragma once

#include <expected>
#include <string>
#include <string_view>

namespace ferry::ide {

struct SettingsKeyMerge {
  std::string text;         // the file as it should be
  bool changed = false;     // text differs from what was there
  std::string kept_value;   // the key was there with another value, left alone ("" otherwise)
};

// `existing`: the file's text ("" or blank: no file). Not a JSON object (comments and trailing
// commas allowed): an error, and the file is never replaced.
std::expected<SettingsKeyMerge, std::string> merge_settings_key(std::string_view existing, const std::string& key,
                                                                const std::string& value);

inline constexpr std::string_view kInterpreterKey = "python.defaultInterpreterPath";
inline constexpr std::string_view kVenvInterpreter = "${workspaceFolder}/.ferry/venv/bin/python";

}  // namespace ferry::ide

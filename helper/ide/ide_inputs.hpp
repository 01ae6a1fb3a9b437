// What every file `ferry ide` writes is made from, and the command lines it puts in them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "helper/debug/attach_configuration.hpp"
#include "helper/deploy/project_config.hpp"

namespace ferry::ide {

// PyCharm's Python Debug Server listens here; `ferry debug --pycharm PORT` tunnels the box's
// 127.0.0.1:PORT to it. Not debugpy's 5678, which `ferry debug`'s own tunnel binds here.
inline constexpr int kDefaultPycharmDebugPort = 5679;

struct IdeInputs {
  deploy::ProjectConfig project;
  std::string ferry = "ferry";               // how the IDE starts ferry: a name on PATH or an absolute path
  std::vector<debug::PathMapping> mappings;  // absolute local roots; remote roots absolute ("~/..." offline)
  int pycharm_port = kDefaultPycharmDebugPort;
};

// The prefix that marks ferry's own run configurations, tasks and launch configurations:
// "ferry: NAME" for launch entry NAME (a name never holds ':', so none can clash with the rest).
inline constexpr std::string_view kEntryPrefix = "ferry: ";
std::string entry_title(const deploy::LaunchEntry& entry);

// `ferry run|debug|train --launch NAME` for an entry, without the ferry command itself. For
// PyCharm a debug entry runs with `--pycharm PORT` (the debug server), for VS Code under debugpy.
enum class Ide { pycharm, vscode };
std::vector<std::string> launch_args(const IdeInputs& in, const deploy::LaunchEntry& entry, Ide ide);

// A word for a POSIX shell command line: as it is when it needs no quotes, else
// protocol::shell_quote's single-quoted form.
std::string shell_word(std::string_view word);

// A run configuration's script text running `ferry ARGS`. PyCharm's Shell Script runs it as
// `<default shell> -c TEXT`: sh on Linux and macOS (POSIX words), powershell.exe on Windows, where
// the text is `& 'ferry.exe' 'ARG' ...; exit $LASTEXITCODE` (single-quoted words, ' doubled; the
// exit passes ferry's status on, which `-c` alone would make 0 or 1).
std::string script_text(std::string_view ferry, const std::vector<std::string>& args, bool powershell);

// A word for a command line the IDE itself splits (LSP4IJ): double-quoted when it holds a blank.
std::string ide_word(std::string_view word);

// `local` (an absolute path) as `macro` or `macro/rel` when it lies inside `root`, else as it is.
std::string project_relative(std::string_view local, const std::string& root, std::string_view macro);

}  // namespace ferry::ide

// What `ferry ide pycharm` writes, as pure functions over strings (formats: shared/notes/ide-formats.md):
// a shared Shell Script run configuration per launch entry (.run/), the Python Debug Server
// configuration, the File Watchers that sync a saved file (.idea/watcherTasks.xml) and the
// LSP4IJ template directory (.ferry/lsp4ij/ferry/).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "helper/ide/ide_inputs.hpp"
#include "helper/ide/xml_text.hpp"

namespace ferry::ide {

// .run/ferry NAME.run.xml: PyCharm and CLion load every *.run.xml outside .idea.
std::string run_configuration_path(const deploy::LaunchEntry& entry);

// The <configuration> of a launch entry: ShConfigurationType in script-text mode, the whole
// command on SCRIPT_TEXT (that mode expands no $FilePath$ and ignores <envs>; ferry applies the
// entry's env itself).
std::string run_configuration_element(const IdeInputs& in, const deploy::LaunchEntry& entry);

// The Python Debug Server (PyCharm Professional) that `ferry debug --pycharm PORT` connects to,
// with one path mapping per ferry.json mapping.
inline constexpr const char* kDebugServerPath = ".run/ferry-debug-server.run.xml";
inline constexpr const char* kDebugServerName = "ferry debug server";
std::string debug_server_element(const IdeInputs& in);

// How to merge a <configuration> into a .run file: by its name attribute.
XmlMergeRequest run_file_merge(std::string key, std::string element);

// One File Watcher per file type: `ferry sync "$FilePath$"` on every save (PyCharm Professional;
// CLion with the File Watchers plugin). Keyed by their names, "ferry sync (EXT)". A watcher the
// user switched off in `existing` (the current watcherTasks.xml) stays off.
inline constexpr const char* kWatcherTasksPath = ".idea/watcherTasks.xml";
inline constexpr std::string_view kWatcherPrefix = "ferry sync";
std::vector<std::string> watcher_extensions();
std::string watcher_name(std::string_view extension);
std::string watcher_task_element(const IdeInputs& in, std::string_view extension, bool enabled = true);
XmlMergeRequest watcher_tasks_merge(const IdeInputs& in, std::string_view existing = {});

// LSP4IJ's "Import template..." (0.14.0 and later) takes this directory; template.json is the server.
inline constexpr const char* kLsp4ijTemplateDir = ".ferry/lsp4ij/ferry";
std::string lsp4ij_template_json(const IdeInputs& in);

}  // namespace ferry::ide

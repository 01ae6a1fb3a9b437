// Which files `ferry ide pycharm|vscode` writes and what each should then hold, worked out from
// the project and the files as they are now. Pure: the caller reads the files and writes the plan.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "helper/ide/ide_inputs.hpp"

namespace ferry::ide {

enum class Change { created, updated, unchanged, failed };

struct PlannedFile {
  std::string path;  // relative to the project root
  std::string text;  // the contents it should have (created, updated, unchanged)
  Change change = Change::unchanged;
  std::string error;  // failed: why it is left as it is
};

struct IdePlan {
  std::vector<PlannedFile> files;
  std::vector<std::string> notes;  // ferry entries left over from launch entries that are gone
};

// The current text of the files ferry may touch, by path relative to the project root: every
// .run/*.run.xml, .idea/watcherTasks.xml, the LSP4IJ template.json, .vscode/{tasks,launch}.json.
// A path that is not there does not exist.
using ExistingFiles = std::map<std::string, std::string>;

IdePlan plan_pycharm(const IdeInputs& in, const ExistingFiles& existing);
IdePlan plan_vscode(const IdeInputs& in, const ExistingFiles& existing);

// The mappings as ferry.json states them, without asking the host: local roots absolute, remote
// roots as written (so "~/..." stays unresolved), deepest local root first.
std::vector<debug::PathMapping> configured_path_mappings(const deploy::ProjectConfig& config);

}  // namespace ferry::ide

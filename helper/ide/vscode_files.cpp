// The VS Code files of `ferry ide vscode`.
#include "helper/ide/vscode_files.hpp"

#include "helper/debug/debugpy_command.hpp"

namespace ferry::ide {

using ojson = nlohmann::ordered_json;

namespace {

// A debug task runs until the script ends; VS Code waits for the end of its start-up (the
// background pattern: ferry debug's ready line, kReadyLinePrefix) before attaching. The problem pattern is required but must never match:
// ferry's output holds no file locations.
ojson debug_problem_matcher() {
  return {{"owner", "ferry"},
          {"pattern", {{"regexp", "^(?!x)x(.)(.)$"}, {"file", 1}, {"message", 2}}},
          {"background",
           {{"activeBegin", true}, {"beginsPattern", "^(?!x)x"}, {"endsPattern", std::string("^") + debug::kReadyLinePrefix}}}};
}

}  // namespace

std::vector<ojson> vscode_tasks(const IdeInputs& in) {
  std::vector<ojson> out;
  for (const auto& e : in.project.launch) {
    ojson task = {{"label", entry_title(e)},
                  {"type", "shell"},
                  {"command", in.ferry},
                  {"args", launch_args(in, e, Ide::vscode)},
                  {"options", {{"cwd", "${workspaceFolder}"}}}};
    if (e.kind == "debug") {
      task["isBackground"] = true;
      task["problemMatcher"] = debug_problem_matcher();
    } else {
      task["problemMatcher"] = ojson::array();  // else VS Code asks which matcher to use
    }
    out.push_back(std::move(task));
  }
  return out;
}

std::vector<ojson> vscode_launch_configurations(const IdeInputs& in) {
  std::vector<debug::PathMapping> mappings = in.mappings;
  for (auto& m : mappings) m.local_root = project_relative(m.local_root, in.project.root.string(), "${workspaceFolder}");
  std::vector<ojson> out;
  for (const auto& e : in.project.launch) {
    if (e.kind != "debug") continue;
    debug::AttachOptions ao;
    ao.port = debug::kDefaultDebugpyPort;  // ferry debug's tunnel: the same port here as on the box
    ao.name = entry_title(e);
    ojson c = debug::vscode_attach_configuration(in.project, mappings, ao);
    c["preLaunchTask"] = entry_title(e);
    out.push_back(std::move(c));
  }
  return out;
}

debug::JsoncMergeRequest tasks_merge(const IdeInputs& in) {
  return {"tasks", "label", {{"version", "2.0.0"}}, vscode_tasks(in)};
}

debug::JsoncMergeRequest launch_merge(const IdeInputs& in) {
  return {"configurations", "name", {{"version", "0.2.0"}}, vscode_launch_configurations(in)};
}

}  // namespace ferry::ide

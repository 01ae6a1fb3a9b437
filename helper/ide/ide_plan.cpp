// Planning `ferry ide`'s files: each merged with what is there, and leftovers reported.
#include "helper/ide/ide_plan.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "helper/ide/pycharm_files.hpp"
#include "helper/ide/vscode_files.hpp"

namespace ferry::ide {

namespace {

namespace fs = std::filesystem;

const std::string* find(const ExistingFiles& existing, const std::string& path) {
  auto it = existing.find(path);
  return it == existing.end() ? nullptr : &it->second;
}

// A merge result (or its error) as a planned file.
template <typename Merge>
PlannedFile planned(const std::string& path, const std::string* old, const std::expected<Merge, std::string>& merged) {
  PlannedFile f{path, "", Change::unchanged, ""};
  if (!merged) {
    f.change = Change::failed;
    f.error = merged.error();
    return f;
  }
  f.text = merged->text;
  f.change = !old ? Change::created : *old == f.text ? Change::unchanged : Change::updated;
  return f;
}

PlannedFile whole_file(const std::string& path, const std::string* old, std::string text) {
  const Change change = !old ? Change::created : *old == text ? Change::unchanged : Change::updated;
  return {path, std::move(text), change, ""};
}

// Names ferry wrote for a launch entry ("ferry: NAME") that is not wanted now. Names with
// parentheses ("ferry: attach (proj)", from ferry debug --write-launch-json) are not entries'.
void note_leftovers(const std::vector<std::string>& names, const std::set<std::string>& wanted, const std::string& where,
                    std::vector<std::string>& notes) {
  for (const auto& n : names) {
    if (!n.starts_with(kEntryPrefix) || wanted.contains(n) || n.find_first_of("()") != std::string::npos) continue;
    notes.push_back(where + ": \"" + n + "\" is for a launch entry ferry.json no longer has; delete it if you no longer want it");
  }
}

}  // namespace

IdePlan plan_pycharm(const IdeInputs& in, const ExistingFiles& existing) {
  IdePlan plan;
  std::set<std::string> run_files;
  for (const auto& e : in.project.launch) {
    const std::string path = run_configuration_path(e);
    run_files.insert(path);
    const std::string* old = find(existing, path);
    auto merged = merge_xml_children(old ? *old : "", run_file_merge(entry_title(e), run_configuration_element(in, e)));
    plan.files.push_back(planned(path, old, merged));
  }
  const std::string* server = find(existing, kDebugServerPath);
  auto merged_server = merge_xml_children(server ? *server : "", run_file_merge(kDebugServerName, debug_server_element(in)));
  plan.files.push_back(planned(kDebugServerPath, server, merged_server));
  const std::string* watchers = find(existing, kWatcherTasksPath);
  auto merged_watchers = merge_xml_children(watchers ? *watchers : "", watcher_tasks_merge(in, watchers ? *watchers : ""));
  plan.files.push_back(planned(kWatcherTasksPath, watchers, merged_watchers));
  if (merged_watchers) {
    std::set<std::string> wanted;
    for (const auto& ext : watcher_extensions()) wanted.insert(watcher_name(ext));
    for (const auto& key : merged_watchers->existing_keys)
      if (key.starts_with(kWatcherPrefix) && !wanted.contains(key))
        plan.notes.push_back(std::string(kWatcherTasksPath) + ": File Watcher \"" + key +
                             "\" is not one ferry writes now; delete it if you no longer want it");
  }
  const std::string template_path = std::string(kLsp4ijTemplateDir) + "/template.json";
  plan.files.push_back(whole_file(template_path, find(existing, template_path), lsp4ij_template_json(in)));

  for (const auto& [path, text] : existing)
    if (path.starts_with(".run/ferry ") && path.ends_with(".run.xml") && !run_files.contains(path))
      plan.notes.push_back(path + ": ferry's run configuration for a launch entry ferry.json no longer has; delete it if "
                                  "you no longer want it");
  return plan;
}

IdePlan plan_vscode(const IdeInputs& in, const ExistingFiles& existing) {
  IdePlan plan;
  std::set<std::string> titles;
  for (const auto& e : in.project.launch) titles.insert(entry_title(e));
  const std::string* tasks = find(existing, kTasksPath);
  if (!in.project.launch.empty() || tasks) {
    auto merged = debug::merge_named_entries(tasks ? *tasks : "", tasks_merge(in));
    plan.files.push_back(planned(kTasksPath, tasks, merged));
    if (merged) note_leftovers(merged->existing_names, titles, kTasksPath, plan.notes);
  }
  const std::string* launch = find(existing, kLaunchPath);
  auto request = launch_merge(in);
  if (!request.entries.empty() || launch) {
    std::set<std::string> debug_titles;
    for (const auto& c : request.entries) debug_titles.insert(c["name"].get<std::string>());
    auto merged = debug::merge_named_entries(launch ? *launch : "", request);
    plan.files.push_back(planned(kLaunchPath, launch, merged));
    if (merged) note_leftovers(merged->existing_names, debug_titles, kLaunchPath, plan.notes);
  }
  return plan;
}

std::vector<debug::PathMapping> configured_path_mappings(const deploy::ProjectConfig& config) {
  auto trimmed = [](std::string s) {
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
  };
  std::vector<debug::PathMapping> out;
  for (const auto& m : config.mappings) {
    const std::string remote = m.remote.starts_with("/") ? fs::path(m.remote).lexically_normal().string() : m.remote;
    out.push_back({trimmed((config.root / m.local).lexically_normal().string()), trimmed(remote)});
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.local_root.size() > b.local_root.size(); });
  return out;
}

}  // namespace ferry::ide

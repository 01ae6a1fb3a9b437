// The PyCharm/CLion files of `ferry ide pycharm`: XML and JSON text, two spaces per level as the
// IDE writes them, so a file the IDE saves back differs from ours as little as possible.
#include "helper/ide/pycharm_files.hpp"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

namespace ferry::ide {

namespace {

std::string option(std::string_view name, std::string_view value) {
  std::string s = "<option name=\"";
  s.append(xml_escape(name)).append("\" value=\"").append(xml_escape(value)).append("\" />");
  return s;
}

// The script text for this platform's PyCharm (script_text: PowerShell where paths are Windows').
std::string command_line(const IdeInputs& in, const std::vector<std::string>& args) {
  return script_text(in.ferry, args, std::filesystem::path::preferred_separator == '\\');
}

// Lines joined with newlines, each but the first indented by `indent` levels of two spaces.
std::string lines(std::initializer_list<std::pair<int, std::string>> items) {
  std::string s;
  for (const auto& [level, text] : items) {
    if (!s.empty()) s.append("\n").append(std::string(2 * static_cast<std::size_t>(level), ' '));
    s += text;
  }
  return s;
}

}  // namespace

std::string run_configuration_path(const deploy::LaunchEntry& entry) { return ".run/ferry " + entry.name + ".run.xml"; }

std::string run_configuration_element(const IdeInputs& in, const deploy::LaunchEntry& entry) {
  return lines({
      {0, "<configuration name=\"" + xml_escape(entry_title(entry)) + "\" type=\"ShConfigurationType\">"},
      {1, option("SCRIPT_TEXT", command_line(in, launch_args(in, entry, Ide::pycharm)))},
      {1, option("INDEPENDENT_SCRIPT_PATH", "true")},
      {1, option("SCRIPT_PATH", "")},
      {1, option("SCRIPT_OPTIONS", "")},
      {1, option("INDEPENDENT_SCRIPT_WORKING_DIRECTORY", "true")},
      {1, option("SCRIPT_WORKING_DIRECTORY", "$PROJECT_DIR$")},
      {1, option("INDEPENDENT_INTERPRETER_PATH", "true")},
      {1, option("INTERPRETER_PATH", "")},
      {1, option("INTERPRETER_OPTIONS", "")},
      {1, option("EXECUTE_IN_TERMINAL", "false")},
      {1, option("EXECUTE_SCRIPT_FILE", "false")},
      {1, "<envs />"},
      {1, "<method v=\"2\" />"},
      {0, "</configuration>"},
  });
}

std::string debug_server_element(const IdeInputs& in) {
  std::string mappings;
  const std::string root = in.project.root.string();
  for (const auto& m : in.mappings) {
    mappings.append("\n").append(8, ' ');
    mappings.append("<mapping local-root=\"")
        .append(xml_escape(project_relative(m.local_root, root, "$PROJECT_DIR$")))
        .append("\" remote-root=\"")
        .append(xml_escape(m.remote_root))
        .append("\" />");
  }
  return lines({
      {0, std::string("<configuration name=\"") + kDebugServerName +
              "\" type=\"PyRemoteDebugConfigurationType\" factoryName=\"Python Remote Debug\">"},
      {1, option("PORT", std::to_string(in.pycharm_port))},
      {1, option("HOST", "localhost")},
      {1, "<PathMappingSettings>"},
      {2, "<option name=\"pathMappings\">"},
      {3, "<list>" + mappings},
      {3, "</list>"},
      {2, "</option>"},
      {1, "</PathMappingSettings>"},
      {1, option("REDIRECT_OUTPUT", "true")},
      {1, option("SUSPEND_AFTER_CONNECT", "true")},
      {1, "<method v=\"2\" />"},
      {0, "</configuration>"},
  });
}

XmlMergeRequest run_file_merge(std::string key, std::string element) {
  XmlMergeRequest r;
  r.path = {{"component", {{"name", "ProjectRunConfigurationManager"}}}};
  r.key_of = [](const XmlElement& e) -> std::optional<std::string> {
    const std::string* name = e.tag == "configuration" ? e.attribute("name") : nullptr;
    return name ? std::optional<std::string>(*name) : std::nullopt;
  };
  r.children = {{std::move(key), std::move(element)}};
  return r;
}

// Python, JSON and YAML (the YAML type also covers .yml): code and the configs runs read.
std::vector<std::string> watcher_extensions() { return {"py", "json", "yaml"}; }

std::string watcher_name(std::string_view extension) {
  std::string s(kWatcherPrefix);
  return s.append(" (").append(extension).append(")");
}

std::string watcher_task_element(const IdeInputs& in, std::string_view extension, bool enabled) {
  // "$FilePath$" in quotes: one argument even for a path with blanks, whether the watcher
  // splits its arguments before or after expanding the macro.
  return lines({
      {0, std::string("<TaskOptions isEnabled=\"") + (enabled ? "true" : "false") + "\">"},
      {1, option("arguments", "sync \"$FilePath$\"")},
      {1, option("checkSyntaxErrors", "false")},
      {1, option("description", "Push the saved file to the ferry host (written by ferry ide pycharm)")},
      {1, option("exitCodeBehavior", "ERROR")},
      {1, option("fileExtension", extension)},
      {1, option("immediateSync", "false")},
      {1, option("name", watcher_name(extension))},
      {1, option("output", "")},
      {1, "<option name=\"outputFilters\">"},
      {2, "<array />"},
      {1, "</option>"},
      {1, option("outputFromStdout", "false")},
      {1, option("program", in.ferry)},
      {1, option("runOnExternalChanges", "false")},
      {1, option("scopeName", "Project Files")},
      {1, option("trackOnlyRoot", "false")},
      {1, option("workingDir", "$ProjectFileDir$")},
      {1, "<envs />"},
      {0, "</TaskOptions>"},
  });
}

XmlMergeRequest watcher_tasks_merge(const IdeInputs& in, std::string_view existing) {
  XmlMergeRequest r;
  r.path = {{"project", {{"version", "4"}}}, {"component", {{"name", "ProjectTasksOptions"}}}};
  r.key_of = [](const XmlElement& e) -> std::optional<std::string> {
    if (e.tag != "TaskOptions") return std::nullopt;
    for (const auto& o : e.children) {
      const std::string* n = o.tag == "option" ? o.attribute("name") : nullptr;
      if (n && *n == "name") {
        const std::string* v = o.attribute("value");
        return v ? std::optional<std::string>(*v) : std::nullopt;
      }
    }
    return std::nullopt;
  };
  // Which of ours the user switched off (isEnabled="false"), to keep them off.
  std::vector<std::string> off;
  if (auto root = parse_xml(existing); root && !existing.empty())
    for (const auto& component : root->children)
      for (const auto& task : component.children)
        if (const std::string* on = task.attribute("isEnabled"); on && *on == "false")
          if (auto key = r.key_of(task)) off.push_back(*key);
  for (const auto& ext : watcher_extensions()) {
    const std::string name = watcher_name(ext);
    const bool enabled = std::find(off.begin(), off.end(), name) == off.end();
    r.children.push_back({name, watcher_task_element(in, ext, enabled)});
  }
  r.prolog = true;
  return r;
}

std::string lsp4ij_template_json(const IdeInputs& in) {
  using ojson = nlohmann::ordered_json;
  const ojson t = {
      {"id", "ferry"},
      {"name", "ferry"},
      {"programArgs", {{"default", ide_word(in.ferry) + " serve"}}},
      {"fileTypeMappings",
       ojson::array({ojson{{"fileType", {{"patterns", ojson::array({"*.py"})}}}, {"languageId", "python"}},
                     ojson{{"fileType", {{"patterns", ojson::array({"ferry.json", "*.json"})}}}, {"languageId", "json"}}})},
  };
  return t.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace ferry::ide

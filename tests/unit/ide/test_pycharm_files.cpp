// The PyCharm/CLion files checked against the formats in shared/notes/ide-formats.md: the Shell
// Script configuration in script-text mode, the Python Debug Server's path mappings, the File
// Watcher's options, the LSP4IJ template's keys; and the command lines in them.
#define BOOST_TEST_MODULE pycharm_files
#include <boost/test/unit_test.hpp>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "helper/ide/pycharm_files.hpp"

using namespace ferry::ide;
using nlohmann::json;

namespace {

IdeInputs inputs(const std::string& ferry = "ferry") {
  auto config = ferry::deploy::parse_project(json::parse(R"({"mappings": [{"local": ".", "remote": "/srv/p"},
      {"local": "data", "remote": "/mnt/data"}], "launch": [
        {"name": "train", "script": "train.py"},
        {"name": "eval it", "kind": "debug", "module": "pkg.eval"},
        {"name": "fit", "kind": "train", "config": "t.json"}]})"),
                                             "/home/me/p");
  BOOST_REQUIRE(config.has_value());
  IdeInputs in;
  in.project = *config;
  in.ferry = ferry;
  in.mappings = {{"/home/me/p/data", "/mnt/data"}, {"/home/me/p", "/srv/p"}, {"/elsewhere", "/x"}};
  return in;
}

XmlElement parsed(const std::string& text) {
  auto e = parse_xml(text);
  BOOST_REQUIRE_MESSAGE(e.has_value(), (e ? std::string() : e.error()) << "\n" << text);
  return *e;
}

// name -> value of the <option name= value=/> children.
std::map<std::string, std::string> options(const XmlElement& e) {
  std::map<std::string, std::string> out;
  for (const auto& c : e.children)
    if (c.tag == "option" && c.attribute("name") && c.attribute("value")) out[*c.attribute("name")] = *c.attribute("value");
  return out;
}

const XmlElement& child(const XmlElement& e, const std::string& tag) {
  for (const auto& c : e.children)
    if (c.tag == tag) return c;
  BOOST_FAIL("no <" << tag << "> in <" << e.tag << ">");
  throw;
}

}  // namespace

BOOST_AUTO_TEST_CASE(run_configuration_is_a_shell_script_in_script_text_mode) {
  const IdeInputs in = inputs();
  const XmlElement c = parsed(run_configuration_element(in, in.project.launch[0]));
  BOOST_TEST(c.tag == "configuration");
  BOOST_TEST(*c.attribute("name") == "ferry: train");
  BOOST_TEST(*c.attribute("type") == "ShConfigurationType");
  BOOST_TEST(!c.attribute("factoryName"));  // a SimpleConfigurationType needs none
  auto o = options(c);
  BOOST_TEST(o["SCRIPT_TEXT"] == "ferry run --launch train");
  BOOST_TEST(o["EXECUTE_SCRIPT_FILE"] == "false");  // script text, run as <shell> -c
  BOOST_TEST(o["EXECUTE_IN_TERMINAL"] == "false");
  BOOST_TEST(o["SCRIPT_WORKING_DIRECTORY"] == "$PROJECT_DIR$");
  BOOST_TEST(o["INDEPENDENT_SCRIPT_WORKING_DIRECTORY"] == "true");
  for (const auto& [name, value] : o) {
    static const std::set<std::string> known = {"SCRIPT_TEXT", "SCRIPT_PATH", "SCRIPT_OPTIONS", "SCRIPT_WORKING_DIRECTORY",
                                                "INTERPRETER_PATH", "INTERPRETER_OPTIONS", "EXECUTE_IN_TERMINAL",
                                                "EXECUTE_SCRIPT_FILE", "INDEPENDENT_SCRIPT_PATH",
                                                "INDEPENDENT_SCRIPT_WORKING_DIRECTORY", "INDEPENDENT_INTERPRETER_PATH"};
    BOOST_TEST(known.contains(name), name << " is not a Shell Script option");
  }
  BOOST_TEST(child(c, "envs").children.empty());  // ignored in this mode: ferry applies the entry's env
  BOOST_TEST(*child(c, "method").attribute("v") == "2");  // exactly these before-run tasks: none
  // The whole file: one component holding it.
  const XmlElement file = parsed(merge_xml_children("", run_file_merge("ferry: train", run_configuration_element(in, in.project.launch[0])))->text);
  BOOST_TEST(file.tag == "component");
  BOOST_TEST(*file.attribute("name") == "ProjectRunConfigurationManager");
  BOOST_TEST(file.children.size() == 1u);
  BOOST_TEST(run_configuration_path(in.project.launch[1]) == ".run/ferry eval it.run.xml");
}

BOOST_AUTO_TEST_CASE(each_kind_runs_its_command_with_words_quoted) {
  const IdeInputs in = inputs("/opt/my tools/ferry");
  auto script = [&](std::size_t i) { return options(parsed(run_configuration_element(in, in.project.launch[i])))["SCRIPT_TEXT"]; };
  BOOST_TEST(script(0) == "'/opt/my tools/ferry' run --launch train");
  BOOST_TEST(script(1) == "'/opt/my tools/ferry' debug --launch 'eval it' --pycharm 5679");
  BOOST_TEST(script(2) == "'/opt/my tools/ferry' train --launch fit");
  BOOST_TEST(shell_word("it's") == "'it'\\''s'");
  BOOST_TEST(shell_word("") == "''");
  BOOST_TEST(shell_word("$HOME") == "'$HOME'");
  BOOST_TEST(ide_word("/opt/my tools/ferry") == "\"/opt/my tools/ferry\"");
  BOOST_TEST(ide_word("/usr/bin/ferry") == "/usr/bin/ferry");
}

// On Windows PyCharm runs the text with powershell.exe -c: PowerShell words, and ferry's status kept.
BOOST_AUTO_TEST_CASE(script_text_for_powershell_quotes_every_word_and_keeps_the_status) {
  const std::vector<std::string> args{"run", "--launch", "it's $HOME `x` a;b"};
  BOOST_TEST(script_text("C:\\Program Files\\ferry\\ferry.exe", args, true) ==
             "& 'C:\\Program Files\\ferry\\ferry.exe' 'run' '--launch' 'it''s $HOME `x` a;b'; exit $LASTEXITCODE");
  BOOST_TEST(script_text("/opt/ferry/bin/ferry", {"run", "--launch", "a b"}, false) == "/opt/ferry/bin/ferry run --launch 'a b'");
}

BOOST_AUTO_TEST_CASE(debug_server_maps_every_mapping) {
  IdeInputs in = inputs();
  in.pycharm_port = 12345;
  const XmlElement c = parsed(debug_server_element(in));
  BOOST_TEST(*c.attribute("type") == "PyRemoteDebugConfigurationType");
  BOOST_TEST(*c.attribute("factoryName") == "Python Remote Debug");
  BOOST_TEST(*c.attribute("name") == kDebugServerName);
  auto o = options(c);
  BOOST_TEST(o["PORT"] == "12345");
  BOOST_TEST(o["HOST"] == "localhost");
  const XmlElement& settings = child(c, "PathMappingSettings");
  const XmlElement& option = child(settings, "option");
  BOOST_TEST(*option.attribute("name") == "pathMappings");
  const XmlElement& list = child(option, "list");
  std::vector<std::string> got;
  for (const auto& m : list.children) {
    BOOST_TEST(m.tag == "mapping");
    got.push_back(*m.attribute("local-root") + " = " + *m.attribute("remote-root"));
  }
  // Local roots inside the project through $PROJECT_DIR$ (the file can be shared), others absolute.
  const std::vector<std::string> want = {"$PROJECT_DIR$/data = /mnt/data", "$PROJECT_DIR$ = /srv/p", "/elsewhere = /x"};
  BOOST_TEST(got == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(file_watchers_run_ferry_sync_on_the_saved_file) {
  const IdeInputs in = inputs("/opt/ferry");
  auto merged = merge_xml_children("", watcher_tasks_merge(in));
  BOOST_REQUIRE(merged.has_value());
  const XmlElement project = parsed(merged->text);
  BOOST_TEST(merged->text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"));
  BOOST_TEST(project.tag == "project");
  BOOST_TEST(*project.attribute("version") == "4");
  const XmlElement& component = child(project, "component");
  BOOST_TEST(*component.attribute("name") == "ProjectTasksOptions");
  BOOST_REQUIRE_EQUAL(component.children.size(), watcher_extensions().size());
  for (std::size_t i = 0; i < component.children.size(); ++i) {
    const XmlElement& task = component.children[i];
    BOOST_TEST(task.tag == "TaskOptions");
    BOOST_TEST(*task.attribute("isEnabled") == "true");
    auto o = options(task);
    BOOST_TEST(o["name"] == "ferry sync (" + watcher_extensions()[i] + ")");
    BOOST_TEST(o["fileExtension"] == watcher_extensions()[i]);
    BOOST_TEST(o["program"] == "/opt/ferry");
    BOOST_TEST(o["arguments"] == "sync \"$FilePath$\"");  // File Watchers expand $FilePath$
    BOOST_TEST(o["workingDir"] == "$ProjectFileDir$");
    BOOST_TEST(o["immediateSync"] == "false");           // on save, not on every pause in typing
    BOOST_TEST(o["runOnExternalChanges"] == "false");
    BOOST_TEST(o["checkSyntaxErrors"] == "false");       // sync a file even while it does not parse
    BOOST_TEST(o["scopeName"] == "Project Files");
    for (const char* key : {"exitCodeBehavior", "output", "outputFromStdout", "trackOnlyRoot", "description"})
      BOOST_TEST(o.contains(key), key);
  }
  // outputFilters holds an empty <array />.
  bool filters = false;
  for (const auto& o : component.children[0].children)
    if (o.attribute("name") && *o.attribute("name") == "outputFilters") filters = child(o, "array").children.empty();
  BOOST_TEST(filters);
}

BOOST_AUTO_TEST_CASE(a_watcher_switched_off_stays_off) {
  const IdeInputs in = inputs();
  std::string text = merge_xml_children("", watcher_tasks_merge(in))->text;
  const std::string on = "<TaskOptions isEnabled=\"true\">";
  text.replace(text.find(on), on.size(), "<TaskOptions isEnabled=\"false\">");  // the user turns (py) off
  auto again = merge_xml_children(text, watcher_tasks_merge(in, text));
  BOOST_REQUIRE(again.has_value());
  BOOST_TEST(again->text == text);
  BOOST_TEST(again->unchanged.size() == watcher_extensions().size());
}

BOOST_AUTO_TEST_CASE(lsp4ij_template_has_the_keys_lsp4ij_reads) {
  const json t = json::parse(lsp4ij_template_json(inputs("/opt/my tools/ferry")));
  BOOST_TEST(t["id"] == "ferry");
  BOOST_TEST(t["name"] == "ferry");
  BOOST_TEST(t["programArgs"]["default"] == "\"/opt/my tools/ferry\" serve");  // mandatory key
  BOOST_TEST(!t.contains("filePatternMappings"));  // not a key LSP4IJ knows
  BOOST_REQUIRE(t["fileTypeMappings"].is_array());
  std::map<std::string, std::string> language;
  for (const auto& m : t["fileTypeMappings"])
    for (const auto& p : m["fileType"]["patterns"]) language[p.get<std::string>()] = m["languageId"].get<std::string>();
  BOOST_TEST(language["*.py"] == "python");
  BOOST_TEST(language["ferry.json"] == "json");
  BOOST_TEST(language["*.json"] == "json");
}

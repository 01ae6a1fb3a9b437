// Golden files of `ferry ide`: every file it writes for tests/golden/ide/ferry.json, fresh
// (fresh/) and merged into a user's files (merge/before -> merge/after), compared byte for byte;
// a second run over its own output changes nothing. After an intended change, regenerate with
//   build/tests/unit/ide/test_ide_golden -- --regenerate
// and read the diff: it is what users' IDE files will look like.
#define BOOST_TEST_MODULE ide_golden
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include "helper/ide/ide_plan.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::ide;
namespace fs = std::filesystem;
using ferry::test::read_file;

namespace {

const fs::path kDir = FERRY_IDE_GOLDEN_DIR;

bool regenerating() {
  auto& suite = boost::unit_test::framework::master_test_suite();
  for (int i = 1; i < suite.argc; ++i)
    if (std::string_view(suite.argv[i]) == "--regenerate") return true;
  return false;
}

// The project of the goldens as the connected host reports it: home /home/u, so the first
// mapping's "~/ferry/proj" is /home/u/ferry/proj.
IdeInputs inputs(const std::string& ferry) {
  auto config = ferry::deploy::load_project(kDir / "ferry.json");
  BOOST_REQUIRE_MESSAGE(config.has_value(), (config ? std::string() : config.error().to_string()));
  config->root = "/home/me/proj";
  IdeInputs in;
  in.project = *config;
  in.ferry = ferry;
  auto mappings = ferry::debug::resolve_path_mappings(in.project, "/home/u/ferry/proj");
  BOOST_REQUIRE(mappings.has_value());
  in.mappings = *mappings;
  return in;
}

// Every file under `dir`, by path relative to it.
ExistingFiles files_under(const fs::path& dir) {
  ExistingFiles out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).generic_string()] = read_file(e.path());
  return out;
}

ExistingFiles plan_all(const IdeInputs& in, const ExistingFiles& existing, std::vector<std::string>& notes,
                       std::vector<Change>* changes = nullptr) {
  ExistingFiles out;
  for (const auto& plan : {plan_pycharm(in, existing), plan_vscode(in, existing)}) {
    for (const auto& f : plan.files) {
      BOOST_TEST((f.change != Change::failed), f.path << ": " << f.error);
      out[f.path] = f.text;
      if (changes) changes->push_back(f.change);
    }
    notes.insert(notes.end(), plan.notes.begin(), plan.notes.end());
  }
  return out;
}

void check_against(const fs::path& golden, const ExistingFiles& got) {
  if (regenerating()) {
    for (const auto& [path, text] : got) {
      fs::create_directories((golden / path).parent_path());
      std::ofstream(golden / path, std::ios::binary | std::ios::trunc) << text;
    }
  }
  const ExistingFiles want = files_under(golden);
  std::set<std::string> want_paths, got_paths;
  for (const auto& [p, t] : want) want_paths.insert(p);
  for (const auto& [p, t] : got) got_paths.insert(p);
  BOOST_TEST(want_paths == got_paths, boost::test_tools::per_element());
  for (const auto& [path, text] : got) {
    auto it = want.find(path);
    if (it != want.end()) BOOST_TEST(text == it->second, "golden " << (golden / path) << " differs; got:\n" << text);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(fresh_project_gets_every_file) {
  std::vector<std::string> notes;
  std::vector<Change> changes;
  const ExistingFiles got = plan_all(inputs("ferry"), {}, notes, &changes);
  check_against(kDir / "fresh", got);
  BOOST_TEST(notes.empty());
  for (auto c : changes) BOOST_TEST((c == Change::created));
  BOOST_TEST(got.size() == 8u);  // 3 run configurations, the debug server, watchers, template, tasks, launch
}

BOOST_AUTO_TEST_CASE(a_second_run_changes_nothing) {
  const IdeInputs in = inputs("ferry");
  std::vector<std::string> notes;
  const ExistingFiles first = plan_all(in, {}, notes);
  std::vector<Change> changes;
  const ExistingFiles second = plan_all(in, first, notes, &changes);
  BOOST_TEST(second == first);
  for (auto c : changes) BOOST_TEST((c == Change::unchanged));
  BOOST_TEST(notes.empty());
}

BOOST_AUTO_TEST_CASE(users_files_are_merged_not_replaced) {
  const IdeInputs in = inputs("/opt/ferry tools/ferry");
  ExistingFiles before = files_under(kDir / "merge" / "before");
  BOOST_REQUIRE(!before.empty());
  std::vector<std::string> notes;
  const ExistingFiles got = plan_all(in, before, notes);
  ExistingFiles after = got;
  after.insert(before.begin(), before.end());  // files ferry does not touch stay (the leftover .run file)
  check_against(kDir / "merge" / "after", after);
  // What is left over from launch entries that are gone is reported, not deleted.
  const std::vector<std::string> expected_notes = {
      ".idea/watcherTasks.xml: File Watcher \"ferry sync (xml)\" is not one ferry writes now; delete it if you no longer want it",
      ".run/ferry old.run.xml: ferry's run configuration for a launch entry ferry.json no longer has; delete it if you no "
      "longer want it",
      ".vscode/tasks.json: \"ferry: old\" is for a launch entry ferry.json no longer has; delete it if you no longer want it",
  };
  BOOST_TEST(notes == expected_notes, boost::test_tools::per_element());
  // And merging into the merged files is a no-op.
  std::vector<std::string> again_notes;
  std::vector<Change> changes;
  const ExistingFiles again = plan_all(in, after, again_notes, &changes);
  for (const auto& [path, text] : again) BOOST_TEST(text == after.at(path), path);
  for (auto c : changes) BOOST_TEST((c == Change::unchanged));
}

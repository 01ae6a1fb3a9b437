// `ferry ide pycharm` and `ferry ide vscode` as a user runs them, on the `local` host (no SSH):
// the files listed as created, a second run that changes nothing and says so, the user's own
// entries kept, the ferry command chosen from PATH, --offline on an SSH host that is not there,
// and a file ferry cannot read left alone while the others are written.
#define BOOST_TEST_MODULE ide_cli
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using ferry::test::read_file;
using ferry::test::TempDir;
using ferry::test::write_file;

namespace {

struct Run {
  int status = -1;
  std::string out, err;
};

constexpr const char* kLaunch = R"("launch": [{"name": "train", "script": "train.py"},
    {"name": "dbg", "kind": "debug", "script": "train.py"}, {"name": "fit", "kind": "train", "config": "t.json"}])";

struct Project {
  TempDir dir{"ferry-ide-cli"};
  fs::path root = dir / "proj";

  explicit Project(const std::string& config = std::string(R"({"name": "idecli", "host": "local", )") + kLaunch + "}") {
    write_file(root / "ferry.json", config);
  }

  // PATH is only /usr/bin:/bin unless `path` says otherwise, so no installed ferry is found.
  Run ferry(const std::string& args, const std::string& path = "/usr/bin:/bin") const {
    const fs::path out = dir / "out", err = dir / "err";
    const std::string cmd = "cd '" + root.string() + "' && env PATH='" + path + "' HOME='" + dir.path().string() +
                            "' XDG_CACHE_HOME='" + (dir / "cache").string() + "' '" FERRY_BIN "' " + args +
                            " </dev/null >'" + out.string() + "' 2>'" + err.string() + "'";
    const int rc = std::system(cmd.c_str());
    return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, read_file(out), read_file(err)};
  }
  std::string file(const std::string& rel) const { return read_file(root / rel); }
};

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(pycharm_writes_every_file_then_nothing_changes) {
  Project p;
  Run first = p.ferry("ide pycharm --ferry ferry");
  BOOST_REQUIRE_MESSAGE(first.status == 0, first.err);
  for (const char* f : {".run/ferry train.run.xml", ".run/ferry dbg.run.xml", ".run/ferry fit.run.xml",
                        ".run/ferry-debug-server.run.xml", ".idea/watcherTasks.xml", ".ferry/lsp4ij/ferry/template.json"}) {
    BOOST_TEST(has(first.out, std::string("created   ") + f), f << "\n" << first.out);
    BOOST_TEST(fs::is_regular_file(p.root / f), f);
  }
  BOOST_TEST(has(p.file(".run/ferry dbg.run.xml"), "value=\"ferry debug --launch dbg --pycharm 5679\""));
  // The absolute remote root: on the local host, the sandbox under XDG_CACHE_HOME.
  const std::string sandbox = fs::weakly_canonical(p.dir / "cache/ferry/local/idecli/ferry/idecli").string();
  BOOST_TEST(has(p.file(".run/ferry-debug-server.run.xml"), "<mapping local-root=\"$PROJECT_DIR$\" remote-root=\"" + sandbox + "\" />"),
             p.file(".run/ferry-debug-server.run.xml"));
  // LSP4IJ's current dialog (0.14.0 and later) and its chooser, which hides .ferry.
  BOOST_TEST(has(first.out, "Import template..."));
  BOOST_TEST(!has(first.out, "custom template"));
  BOOST_TEST(has(first.out, "paste this path"));
  BOOST_TEST(has(first.out, "Never import it again"));
  BOOST_TEST(has(first.out, "PyCharm Community\n     and CLion have no Python Debug Server"));
  BOOST_TEST(has(first.out, (p.root / ".ferry/lsp4ij/ferry").string()));
  BOOST_TEST((fs::status(p.root / ".idea/watcherTasks.xml").permissions() ==
              (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read)));

  Run second = p.ferry("ide pycharm --ferry ferry");
  BOOST_REQUIRE_MESSAGE(second.status == 0, second.err);
  BOOST_TEST(!has(second.out, "created"));
  BOOST_TEST(!has(second.out, "updated"));
  BOOST_TEST(has(second.out, "unchanged .idea/watcherTasks.xml"));
  BOOST_TEST(has(second.out, "Nothing changed"), second.out);
}

BOOST_AUTO_TEST_CASE(the_ferry_command_is_ferry_only_when_path_finds_this_one) {
  Project p;
  BOOST_REQUIRE(p.ferry("ide vscode").status == 0);
  const std::string self = fs::canonical(FERRY_BIN).string();
  BOOST_TEST(has(p.file(".vscode/tasks.json"), "\"command\": \"" + self + "\""), p.file(".vscode/tasks.json"));
  Run on_path = p.ferry("ide vscode", fs::path(FERRY_BIN).parent_path().string() + ":/usr/bin:/bin");
  BOOST_REQUIRE(on_path.status == 0);
  BOOST_TEST(has(on_path.out, "updated   .vscode/tasks.json"), on_path.out);
  BOOST_TEST(has(p.file(".vscode/tasks.json"), "\"command\": \"ferry\""));
}

BOOST_AUTO_TEST_CASE(users_entries_and_comments_are_kept) {
  Project p;
  write_file(p.root / ".vscode/tasks.json",
             "{\n  // mine\n  \"version\": \"2.0.0\",\n  \"tasks\": [{\"label\": \"lint\", \"type\": \"shell\", \"command\": \"ruff\"}]\n}\n");
  write_file(p.root / ".idea/watcherTasks.xml",
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<project version=\"4\">\n  <component name=\"ProjectTasksOptions\">\n"
             "    <TaskOptions isEnabled=\"true\">\n      <option name=\"name\" value=\"black\" />\n    </TaskOptions>\n"
             "  </component>\n</project>\n");
  Run r = p.ferry("ide vscode --ferry ferry");
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::string tasks = p.file(".vscode/tasks.json");
  BOOST_TEST(tasks.starts_with("{\n  // mine\n  \"version\": \"2.0.0\",\n  \"tasks\": [{\"label\": \"lint\""), tasks);
  BOOST_TEST(has(tasks, "\"label\": \"ferry: dbg\""));
  BOOST_TEST(has(p.file(".vscode/launch.json"), "\"preLaunchTask\": \"ferry: dbg\""));
  Run again = p.ferry("ide vscode --ferry ferry");
  BOOST_TEST(has(again.out, "Nothing changed"), again.out);

  BOOST_REQUIRE(p.ferry("ide pycharm --ferry ferry").status == 0);
  const std::string watchers = p.file(".idea/watcherTasks.xml");
  BOOST_TEST(has(watchers, "<TaskOptions isEnabled=\"true\">\n      <option name=\"name\" value=\"black\" />\n    </TaskOptions>"),
             watchers);
  BOOST_TEST(has(watchers, "value=\"ferry sync (py)\""));
}

BOOST_AUTO_TEST_CASE(a_file_ferry_cannot_read_is_left_alone) {
  Project p;
  write_file(p.root / ".idea/watcherTasks.xml", "<project version=\"4\"><component");
  Run r = p.ferry("ide pycharm --ferry ferry");
  BOOST_TEST(r.status == 1);
  BOOST_TEST(has(r.err, ".idea/watcherTasks.xml: it is not XML that ferry can read"), r.err);
  BOOST_TEST(p.file(".idea/watcherTasks.xml") == "<project version=\"4\"><component");
  BOOST_TEST(fs::is_regular_file(p.root / ".run/ferry train.run.xml"));  // the rest is written
}

BOOST_AUTO_TEST_CASE(offline_keeps_tilde_roots_and_says_so) {
  Project p(std::string(R"({"name": "x", "host": "127.0.0.1:1", "mappings": [{"remote": "~/work/x"}], )") + kLaunch + "}");
  Run unreachable = p.ferry("ide pycharm --ferry ferry");
  BOOST_TEST(unreachable.status == 1);
  BOOST_TEST(has(unreachable.err, "--offline"), unreachable.err);
  BOOST_TEST(!fs::exists(p.root / ".run"));
  Run offline = p.ferry("ide pycharm --offline --ferry ferry");
  BOOST_REQUIRE_MESSAGE(offline.status == 0, offline.err);
  BOOST_TEST(has(offline.err, "warning: remote root ~/work/x is written with its '~'"), offline.err);
  BOOST_TEST(has(p.file(".run/ferry-debug-server.run.xml"), "remote-root=\"~/work/x\""));
}

BOOST_AUTO_TEST_CASE(no_launch_entries_is_said_not_an_error) {
  Project p(R"({"name": "empty", "host": "local"})");
  Run r = p.ferry("ide vscode");
  BOOST_TEST(r.status == 0);
  BOOST_TEST(has(r.err, "no launch entries"), r.err);
  BOOST_TEST(!fs::exists(p.root / ".vscode"));
  Run help = p.ferry("ide --help");
  BOOST_TEST(has(help.out, "pycharm"));
  BOOST_TEST(has(help.out, "vscode"));
}

// `ferry watch` as a user runs it: the real binary on a temp project with the `local` host. The
// initial sync, a save, a new nested directory with files, an ignored directory that never
// causes a push, and Ctrl-C (SIGINT) ending it with status 0. Each step waits for the summary
// line of its push (a read with a deadline), never for a fixed time.
#define BOOST_TEST_MODULE watch_cli
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <filesystem>

#include "tests/support/spawned_process.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::test::read_file;
using ferry::test::SpawnedProcess;
using ferry::test::TempDir;
using ferry::test::write_file;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// Summary lines until one contains `what`; fails the test at the deadline.
std::string line_with(SpawnedProcess& p, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    BOOST_REQUIRE_MESSAGE(left.count() > 0, "no summary line with '" << what << "'");
    auto line = p.read_line(left);
    BOOST_REQUIRE_MESSAGE(line.has_value(), "ferry watch ended its output before '" << what << "'");
    BOOST_TEST_MESSAGE("ferry watch: " << *line);
    if (line->find(what) != std::string::npos) return *line;
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(watch_pushes_saves_and_new_directories_and_exits_0_on_ctrl_c) {
  TempDir t("ferry-watch-cli");
  const fs::path project = t / "proj";
  write_file(project / "ferry.json", R"({"name":"watch","host":"local","mappings":[{"local":".","remote":"~/w"}]})");
  write_file(project / ".gitignore", "node_modules/\n");
  write_file(project / "train.py", "v1\n");
  const fs::path remote = t / "cache/ferry/local/watch/w";

  SpawnedProcess p({FERRY_BIN, "watch", "--quiet-ms", "50"}, project.string(),
                   {{"XDG_CACHE_HOME", (t / "cache").string()}, {"FERRY_AGENT", FERRY_AGENT_PATH}});
  std::string first = line_with(p, "initial sync");
  BOOST_TEST(first.find("3 files sent") != std::string::npos, first);  // ferry.json, .gitignore, train.py
  BOOST_TEST(read_file(remote / "train.py") == "v1\n");

  write_file(project / "train.py", "v2\n");
  std::string saved = line_with(p, "train.py: ");
  BOOST_TEST(saved.find("1 files sent") != std::string::npos, saved);
  BOOST_TEST(read_file(remote / "train.py") == "v2\n");

  write_file(project / "pkg/models/resnet.py", "r\n");
  write_file(project / "pkg/models/vit.py", "v\n");
  while (read_file(remote / "pkg/models/vit.py") != "v\n" || read_file(remote / "pkg/models/resnet.py") != "r\n")
    line_with(p, "files sent");  // one push per settled burst: the files may span two

  // An ignored directory's files never cause a push: the next push is the save made after them.
  write_file(project / "node_modules/left-pad/index.js", "x\n");
  write_file(project / "eval.py", "e\n");
  std::string after = line_with(p, "files sent");
  BOOST_TEST(after.find(" eval.py: 1 files sent") != std::string::npos, after);
  BOOST_TEST(!fs::exists(remote / "node_modules"));

  p.signal(SIGINT);
  auto status = p.wait(30s);
  BOOST_REQUIRE_MESSAGE(status.has_value(), "ferry watch did not exit on SIGINT");
  BOOST_TEST(WIFEXITED(*status));
  BOOST_TEST(WEXITSTATUS(*status) == 0);
}

// With several mappings every one is watched and pushed: a save in the second mapping (a remote
// of its own outside the sandbox) goes to it, and Ctrl-C still ends every watch with status 0.
BOOST_AUTO_TEST_CASE(watch_pushes_a_save_in_the_second_mapping) {
  TempDir t("ferry-watch-maps");
  const fs::path project = t / "proj";
  const fs::path b = t / "elsewhere/b";
  write_file(project / "ferry.json", R"({"name":"wm","host":"local","mappings":[{"local":"src","remote":"~/a"},)"
                                     R"({"local":"data-scripts","remote":")" + b.string() + R"("}]})");
  write_file(project / "src/train.py", "t1\n");
  write_file(project / "data-scripts/prep.py", "p1\n");
  const fs::path a = t / "cache/ferry/local/wm/a";

  SpawnedProcess p({FERRY_BIN, "watch", "--quiet-ms", "50"}, project.string(),
                   {{"XDG_CACHE_HOME", (t / "cache").string()}, {"FERRY_AGENT", FERRY_AGENT_PATH}});
  line_with(p, "src: initial sync: 1 files sent");
  line_with(p, "data-scripts: initial sync: 1 files sent");
  BOOST_TEST(read_file(a / "train.py") == "t1\n");
  BOOST_TEST(read_file(b / "prep.py") == "p1\n");

  write_file(project / "data-scripts/prep.py", "p2\n");
  std::string saved = line_with(p, "data-scripts: prep.py: ");
  BOOST_TEST(saved.find("1 files sent") != std::string::npos, saved);
  BOOST_TEST(read_file(b / "prep.py") == "p2\n");

  write_file(project / "src/train.py", "t2\n");
  line_with(p, "src: train.py: 1 files sent");
  BOOST_TEST(read_file(a / "train.py") == "t2\n");

  p.signal(SIGINT);
  auto status = p.wait(30s);
  BOOST_REQUIRE_MESSAGE(status.has_value(), "ferry watch did not exit on SIGINT");
  BOOST_TEST(WIFEXITED(*status));
  BOOST_TEST(WEXITSTATUS(*status) == 0);
}

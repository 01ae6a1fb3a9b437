// `ferry sync` and `ferry pull` as a user runs them: the real binary on a temp project with the
// `local` host (its sandbox under a temp XDG_CACHE_HOME): JSON summaries, exit codes, dry run,
// a no-op second sync, a conflict's exit status, and a pull.
#define BOOST_TEST_MODULE sync_cli
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using ferry::test::TempDir;
using ferry::test::read_file;
using ferry::test::write_file;
using json = nlohmann::json;

namespace {

struct Run {
  int code;
  std::string out;
};

// Runs ferry with a clean cache dir; stdout captured, stderr left to the test log.
Run run_ferry(const TempDir& t, const std::string& args) {
  std::string cmd = "cd '" + (t.path() / "proj").string() + "' && XDG_CACHE_HOME='" + (t.path() / "cache").string() +
                    "' FERRY_AGENT='" FERRY_AGENT_PATH "' '" FERRY_BIN "' " + args;
  FILE* p = ::popen(cmd.c_str(), "r");
  BOOST_REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace

BOOST_AUTO_TEST_CASE(sync_and_pull_from_the_command_line) {
  TempDir t;
  write_file(t.path() / "proj/ferry.json", R"({"name":"cli","host":"local","mappings":[{"local":".","remote":"~/cli"}]})");
  write_file(t.path() / "proj/train.py", "print('hi')\n");
  write_file(t.path() / "proj/data/x.txt", "x\n");
  const fs::path remote = t.path() / "cache/ferry/local/cli/cli";

  Run dry = run_ferry(t, "sync --dry-run --json");
  BOOST_REQUIRE_EQUAL(dry.code, 0);
  json d = json::parse(dry.out);
  BOOST_TEST(d["dryRun"] == true);
  BOOST_TEST(d["filesSent"] == 3);
  BOOST_TEST(!fs::exists(remote / "train.py"));

  Run first = run_ferry(t, "sync --json");
  BOOST_REQUIRE_EQUAL(first.code, 0);
  json s = json::parse(first.out);
  for (const char* k : {"filesSent", "filesDeleted", "conflicts", "bytesLiteral", "bytesMatched", "bytesOnWire", "seconds"})
    BOOST_TEST(s.contains(k), k);
  BOOST_TEST(s["filesSent"] == 3);
  BOOST_TEST(read_file(remote / "data/x.txt") == "x\n");

  Run second = run_ferry(t, "sync");
  BOOST_REQUIRE_EQUAL(second.code, 0);
  BOOST_TEST(second.out.starts_with("0 files sent, 0 deleted, 0 conflicts"), second.out);

  // A conflict: exit status 3 and the remote file kept.
  write_file(remote / "train.py", "edited on the box\n");
  write_file(t.path() / "proj/train.py", "edited here\n");
  Run conflict = run_ferry(t, "sync --json");
  BOOST_TEST(conflict.code == 3);
  BOOST_TEST(json::parse(conflict.out)["conflicts"] == 1);
  BOOST_TEST(read_file(remote / "train.py") == "edited on the box\n");
  BOOST_TEST(run_ferry(t, "sync --force").code == 0);
  BOOST_TEST(read_file(remote / "train.py") == "edited here\n");

  write_file(remote / "runs/loss.csv", "1,0.5\n");
  Run pull = run_ferry(t, "pull runs --json");
  BOOST_REQUIRE_EQUAL(pull.code, 0);
  BOOST_TEST(json::parse(pull.out)["filesSent"] == 1);
  BOOST_TEST(read_file(t.path() / "proj/runs/loss.csv") == "1,0.5\n");

  BOOST_TEST(run_ferry(t, "pull").code != 0);  // PATH is required
}

// `ferry sync PATH...` (what the IDE's File Watcher runs on save): only the named files travel,
// given relative to the cwd or absolute; a path outside the mapping is skipped with a note and no
// connect; a directory is refused.
BOOST_AUTO_TEST_CASE(sync_of_named_files_only) {
  TempDir t;
  write_file(t.path() / "proj/ferry.json",
             R"({"name":"paths","host":"local","mappings":[{"local":"src","remote":"~/paths"}]})");
  write_file(t.path() / "proj/src/a.py", "a = 1\n");
  write_file(t.path() / "proj/src/pkg/b.py", "b = 1\n");
  write_file(t.path() / "proj/src/c.py", "c = 1\n");
  write_file(t.path() / "proj/notes.txt", "outside the mapping\n");
  const fs::path remote = t.path() / "cache/ferry/local/paths/paths";

  Run some = run_ferry(t, "sync --json src/a.py '" + (t.path() / "proj/src/pkg/b.py").string() + "'");
  BOOST_REQUIRE_EQUAL(some.code, 0);
  BOOST_TEST(json::parse(some.out)["filesSent"] == 2);
  BOOST_TEST(read_file(remote / "a.py") == "a = 1\n");
  BOOST_TEST(read_file(remote / "pkg/b.py") == "b = 1\n");
  BOOST_TEST(!fs::exists(remote / "c.py"));  // not named

  Run outside = run_ferry(t, "sync --json notes.txt");
  BOOST_TEST(outside.code == 0);
  BOOST_TEST(outside.out.empty(), outside.out);  // nothing to sync: no summary, no link made
  BOOST_TEST(!fs::exists(t.path() / "cache/ferry/local/paths/paths/notes.txt"));

  Run dir = run_ferry(t, "sync src/pkg");
  BOOST_TEST(dir.code == 2);

  write_file(t.path() / "proj/src/a.py", "a = 2\n");
  Run again = run_ferry(t, "sync --json src/a.py notes.txt");
  BOOST_REQUIRE_EQUAL(again.code, 0);
  BOOST_TEST(json::parse(again.out)["filesSent"] == 1);
  BOOST_TEST(read_file(remote / "a.py") == "a = 2\n");
  BOOST_TEST(!fs::exists(remote / "c.py"));
}

// Every mapping syncs, over the one link: `src` lands in the sandbox, `data-scripts` in a
// directory of its own elsewhere (an absolute remote, opened by the same agent). An edit in the
// second goes alone; PATH goes to the mapping holding it; a pull path goes to its mapping.
BOOST_AUTO_TEST_CASE(every_mapping_is_synced_and_pulled) {
  TempDir t;
  const fs::path b = t.path() / "elsewhere/b";
  write_file(t.path() / "proj/ferry.json", R"({"name":"maps","host":"local","mappings":[{"local":"src","remote":"~/a"},)"
                                           R"({"local":"data-scripts","remote":")" + b.string() + R"("}]})");
  write_file(t.path() / "proj/src/train.py", "t = 1\n");
  write_file(t.path() / "proj/data-scripts/prep.py", "p = 1\n");
  write_file(t.path() / "proj/notes.txt", "in no mapping\n");
  const fs::path a = t.path() / "cache/ferry/local/maps/a";

  Run first = run_ferry(t, "sync --json");
  BOOST_REQUIRE_EQUAL(first.code, 0);
  json s = json::parse(first.out);
  BOOST_TEST(s["filesSent"] == 2);
  BOOST_REQUIRE_EQUAL(s["mappings"].size(), 2u);
  BOOST_TEST(s["mappings"][0]["local"] == "src");
  BOOST_TEST(s["mappings"][1]["remote"] == b.string());
  BOOST_TEST(read_file(a / "train.py") == "t = 1\n");
  BOOST_TEST(read_file(b / "prep.py") == "p = 1\n");
  BOOST_TEST(!fs::exists(a / "notes.txt"));
  BOOST_TEST(!fs::exists(b / "src"));

  write_file(t.path() / "proj/data-scripts/prep.py", "p = 2\n");
  Run edit = run_ferry(t, "sync --json");
  BOOST_REQUIRE_EQUAL(edit.code, 0);
  json e = json::parse(edit.out);
  BOOST_TEST(e["filesSent"] == 1);
  BOOST_TEST(e["mappings"][0]["filesSent"] == 0);
  BOOST_TEST(e["mappings"][1]["filesSent"] == 1);
  BOOST_TEST(read_file(b / "prep.py") == "p = 2\n");

  // Human output: a line per mapping.
  Run quiet = run_ferry(t, "sync");
  BOOST_REQUIRE_EQUAL(quiet.code, 0);
  BOOST_TEST(quiet.out.find("src -> ~/a: 0 files sent") != std::string::npos, quiet.out);
  BOOST_TEST(quiet.out.find("data-scripts -> " + b.string() + ": 0 files sent") != std::string::npos, quiet.out);

  write_file(t.path() / "proj/data-scripts/prep.py", "p = 3\n");
  write_file(t.path() / "proj/src/train.py", "t = 2\n");
  Run named = run_ferry(t, "sync --json data-scripts/prep.py notes.txt");
  BOOST_REQUIRE_EQUAL(named.code, 0);
  json n = json::parse(named.out);
  BOOST_TEST(n["filesSent"] == 1);
  BOOST_REQUIRE_EQUAL(n["mappings"].size(), 1u);  // only the mapping holding the path
  BOOST_TEST(n["mappings"][0]["local"] == "data-scripts");
  BOOST_TEST(read_file(b / "prep.py") == "p = 3\n");
  BOOST_TEST(read_file(a / "train.py") == "t = 1\n");  // not named

  write_file(b / "out/result.txt", "made on the box\n");
  write_file(a / "runs/log.txt", "log\n");
  Run pulled = run_ferry(t, "pull --json data-scripts/out");
  BOOST_REQUIRE_EQUAL(pulled.code, 0);
  BOOST_TEST(json::parse(pulled.out)["filesSent"] == 1);
  BOOST_TEST(read_file(t.path() / "proj/data-scripts/out/result.txt") == "made on the box\n");
  BOOST_TEST(!fs::exists(t.path() / "proj/src/runs"));
  BOOST_TEST(run_ferry(t, "sync").code == 0);  // src/train.py's edit: else pulling src is a conflict
  Run all = run_ferry(t, "pull --json .");
  BOOST_REQUIRE_EQUAL(all.code, 0);
  BOOST_TEST(read_file(t.path() / "proj/src/runs/log.txt") == "log\n");
  BOOST_TEST(run_ferry(t, "pull outputs").code == 2);  // in no mapping: a usage error
}

// A mapping inside another's folder keeps its files: the outer mapping neither pushes nor pulls
// them (each file belongs to the deepest mapping holding it).
BOOST_AUTO_TEST_CASE(a_nested_mapping_takes_its_folder_from_the_outer_one) {
  TempDir t;
  write_file(t.path() / "proj/ferry.json",
             R"({"name":"nest","host":"local","mappings":[{"local":".","remote":"~/root"},{"local":"data/raw","remote":"~/raw"}]})");
  write_file(t.path() / "proj/train.py", "t\n");
  write_file(t.path() / "proj/data/raw/x.csv", "1\n");
  write_file(t.path() / "proj/data/other.csv", "2\n");
  const fs::path root = t.path() / "cache/ferry/local/nest/root", raw = t.path() / "cache/ferry/local/nest/raw";
  Run first = run_ferry(t, "sync --json");
  BOOST_REQUIRE_EQUAL(first.code, 0);
  BOOST_TEST(read_file(raw / "x.csv") == "1\n");
  BOOST_TEST(read_file(root / "data/other.csv") == "2\n");
  BOOST_TEST(!fs::exists(root / "data/raw"));
  write_file(root / "data/raw/stray.csv", "not raw's\n");
  Run pulled = run_ferry(t, "pull --json .");
  BOOST_REQUIRE_EQUAL(pulled.code, 0);
  BOOST_TEST(!fs::exists(t.path() / "proj/data/raw/stray.csv"));
}

// Names are bytes: a conflict on a file whose name is not UTF-8 still prints a JSON summary
// (the name with U+FFFD in it) and exit status 3; it used to abort in nlohmann's dump.
BOOST_AUTO_TEST_CASE(a_json_summary_with_a_name_that_is_not_utf8) {
  TempDir t;
  write_file(t.path() / "proj/ferry.json", R"({"name":"u8","host":"local","mappings":[{"local":".","remote":"~/u8"}]})");
  write_file(t.path() / "proj/bad\xffname.txt", "one\n");
  const fs::path remote = t.path() / "cache/ferry/local/u8/u8";
  Run first = run_ferry(t, "sync --json");
  BOOST_REQUIRE_EQUAL(first.code, 0);
  BOOST_TEST(json::parse(first.out)["filesSent"] == 2);
  BOOST_TEST(read_file(remote / "bad\xffname.txt") == "one\n");
  write_file(remote / "bad\xffname.txt", "edited on the box\n");
  write_file(t.path() / "proj/bad\xffname.txt", "edited here\n");
  Run conflict = run_ferry(t, "sync --json");
  BOOST_TEST(conflict.code == 3);
  json c = json::parse(conflict.out);
  BOOST_TEST(c["conflicts"] == 1);
  BOOST_TEST(c["conflictList"][0]["path"] == "bad\xef\xbf\xbdname.txt");
  BOOST_TEST(read_file(remote / "bad\xffname.txt") == "edited on the box\n");
}

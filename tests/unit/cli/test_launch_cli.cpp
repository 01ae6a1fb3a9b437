// ferry run/debug/train --launch NAME as a user runs them: the real binary on a temp project with
// the `local` host. The entry's script, args, env and cwd reach the run (extra args appended,
// --cwd and --env winning); unknown names list the names there are; each command refuses the
// kinds it does not take and names the one that does.
#define BOOST_TEST_MODULE launch_cli
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/loopback_port.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using ferry::test::read_file;
using ferry::test::TempDir;
using ferry::test::write_file;
using json = nlohmann::json;

namespace {

struct Run {
  int status = -1;
  std::string out, err;
};

struct Project {
  TempDir dir{"ferry-launch-cli"};
  fs::path root = dir / "proj";

  Project() {
    write_file(root / "ferry.json", R"({"name": "launch-cli", "host": "local", "env": {"A": "top", "B": "top"},
      "launch": [
        {"name": "show", "script": "tools/show.py", "args": ["one", "two words"], "env": {"B": "entry"}, "cwd": "runs"},
        {"name": "show module", "kind": "debug", "module": "tools.show"},
        {"name": "fit", "kind": "train", "config": "cfg/tiny.json"}]})");
    // Prints what it was started with as one JSON line.
    write_file(root / "tools/show.py",
               "import json, os, sys\n"
               "print(json.dumps({'argv': sys.argv[1:], 'script': sys.argv[0], 'cwd': os.path.basename(os.getcwd()),\n"
               "                  'env': [os.environ.get(k) for k in ('A', 'B', 'C')]}))\n");
    write_file(root / "tools/__init__.py", "");
    fs::create_directories(root / "runs");
  }

  Run ferry(const std::string& args) const {
    const fs::path out = dir / "out", err = dir / "err";
    const std::string cmd = "cd '" + root.string() + "' && XDG_CACHE_HOME='" + (dir / "cache").string() +
                            "' FERRY_AGENT='" FERRY_AGENT_PATH "' '" FERRY_BIN "' " + args + " </dev/null >'" +
                            out.string() + "' 2>'" + err.string() + "'";
    const int rc = std::system(cmd.c_str());
    return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, read_file(out), read_file(err)};
  }
};

json last_json_line(const std::string& out) {
  auto end = out.find_last_not_of('\n');
  BOOST_REQUIRE(end != std::string::npos);
  auto start = out.rfind('\n', end);
  return json::parse(out.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1)));
}

}  // namespace

BOOST_AUTO_TEST_CASE(run_launch_uses_the_entrys_script_args_env_and_cwd) {
  Project p;
  Run r = p.ferry("run --launch show -- --extra");
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.err);
  json got = last_json_line(r.out);
  BOOST_TEST(got["argv"] == json::parse(R"(["one", "two words", "--extra"])"));
  BOOST_TEST(got["script"] == "../tools/show.py");  // named from the entry's cwd
  BOOST_TEST(got["cwd"] == "runs");
  BOOST_TEST(got["env"] == json::parse(R"(["top", "entry", null])"));
}

BOOST_AUTO_TEST_CASE(command_line_cwd_and_env_win_over_the_entry) {
  Project p;
  Run r = p.ferry("run --launch show --cwd . --env B=cli --env C=cli");
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.err);
  json got = last_json_line(r.out);
  BOOST_TEST(got["script"] == "tools/show.py");
  BOOST_TEST(got["cwd"] == "launch-cli");  // the mapping root: ~/ferry/launch-cli in the sandbox
  BOOST_TEST(got["env"] == json::parse(R"(["top", "cli", "cli"])"));
}

BOOST_AUTO_TEST_CASE(a_debug_entry_runs_plainly_with_ferry_run) {
  Project p;
  Run r = p.ferry("run --launch 'show module' -- x");
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.err);
  json got = last_json_line(r.out);
  BOOST_TEST(got["argv"] == json::parse(R"(["x"])"));
  BOOST_TEST(got["env"] == json::parse(R"(["top", "top", null])"));
}

// ferry debug --pycharm runs the entry plainly beside the reverse tunnel: the same command,
// cwd and env as ferry run, with no debugpy needed.
BOOST_AUTO_TEST_CASE(debug_launch_with_pycharm_runs_the_entry) {
  Project p;
  const int port = ferry::test::free_loopback_port();  // not a guess: a guessed port was taken once under a full run
  Run r = p.ferry("debug --pycharm " + std::to_string(port) + " --launch show -- --extra");
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.err);
  BOOST_TEST(r.out.find("pydevd_pycharm.settrace('localhost', port=" + std::to_string(port)) != std::string::npos, r.out);
  json got = last_json_line(r.out);
  BOOST_TEST(got["argv"] == json::parse(R"(["one", "two words", "--extra"])"));
  BOOST_TEST(got["cwd"] == "runs");
  BOOST_TEST(got["env"] == json::parse(R"(["top", "entry", null])"));
}

BOOST_AUTO_TEST_CASE(an_unknown_name_lists_the_names_there_are) {
  Project p;
  for (const char* cmd : {"run", "debug", "train"}) {
    Run r = p.ferry(std::string(cmd) + " --launch shwo");
    BOOST_TEST(r.status == 2, cmd);
    BOOST_TEST(r.err.find("no launch entry \"shwo\" in ferry.json; there are: \"show\" (run) \"show module\" (debug) "
                          "\"fit\" (train)") != std::string::npos,
               r.err);
    BOOST_TEST(r.out.empty());
  }
}

BOOST_AUTO_TEST_CASE(each_command_names_the_one_that_takes_a_kind) {
  Project p;
  for (const char* cmd : {"run", "debug"}) {
    Run r = p.ferry(std::string(cmd) + " --launch fit");
    BOOST_TEST(r.status == 2);
    BOOST_TEST(r.err.find("launch entry \"fit\" is kind \"train\": start it with ferry train --launch fit") !=
                   std::string::npos,
               r.err);
  }
  Run train = p.ferry("train --launch show");
  BOOST_TEST(train.status == 2);
  BOOST_TEST(train.err.find("is kind \"run\": start it with ferry run --launch show or ferry debug --launch show") !=
                 std::string::npos,
             train.err);
  Run both = p.ferry("train cfg/tiny.json --launch fit");
  BOOST_TEST(both.status == 2);
  BOOST_TEST(both.err.find("give a CONFIG file or --launch NAME") != std::string::npos, both.err);
  Run missing_config = p.ferry("train --launch fit");  // cfg/tiny.json does not exist
  BOOST_TEST(missing_config.status == 2);
  BOOST_TEST(missing_config.err.find("no config file " + (p.root / "cfg/tiny.json").string()) != std::string::npos,
             missing_config.err);
}

BOOST_AUTO_TEST_CASE(nothing_to_run_says_how) {
  Project p;
  Run r = p.ferry("run");
  BOOST_TEST(r.status == 2);
  BOOST_TEST(r.err.find("ferry run --launch NAME") != std::string::npos, r.err);
}

BOOST_AUTO_TEST_CASE(help_tells_which_kinds_each_command_takes) {
  Project p;
  Run run = p.ferry("run --help");
  BOOST_TEST(run.out.find("kind run or debug") != std::string::npos, run.out);
  Run debug = p.ferry("debug --help");
  BOOST_TEST(debug.out.find("kind debug or run") != std::string::npos, debug.out);
  Run train = p.ferry("train --help");
  BOOST_TEST(train.out.find("kind train") != std::string::npos, train.out);
}

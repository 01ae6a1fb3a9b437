// Project trust on the command line, with the real executable and no terminal: an untrusted
// project's commands exit 2 naming `ferry trust-project` and run, connect and create nothing;
// --trust and `ferry trust-project` record the decision; a changed ferry.json asks again;
// `ferry init` trusts what it writes; autostop's "stop" is never armed on the local host.
#define BOOST_TEST_MODULE trust_cli
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/connect_recorder.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using ferry::test::TempDir;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Run {
  int status = -1;
  std::string out, err;
};

// A project in a temp dir with its own (empty) trust store and sandbox.
struct Project {
  TempDir dir{"ferry-trust-cli"};
  TempDir home{"ferry-trust-cli-home"};
  json doc{{"name", "tp"}, {"host", "local"}, {"interpreter", "/usr/bin/python3"},
           {"mappings", {{{"local", "."}, {"remote", "~/work/tp"}}}}};
  Project() {
    ferry::test::write_file(dir / "main.py", "print('hi')\n");
    save();
  }
  void save() const { ferry::test::write_file(dir / "ferry.json", doc.dump(2)); }
  fs::path sandbox() const { return home / "cache" / "ferry" / "local" / "tp"; }
  // `ferry ARGS` in the project, stdin from /dev/null (no terminal to ask on).
  Run ferry(const std::string& args) const {
    fs::path out = home / ".out", err = home / ".err";
    std::string cmd = "cd '" + dir.path().string() + "' && XDG_CONFIG_HOME='" + (home / "config").string() +
                      "' XDG_CACHE_HOME='" + (home / "cache").string() + "' FERRY_AGENT='" FERRY_AGENT_PATH "' '" FERRY_BIN
                      "' " + args + " </dev/null >'" + out.string() + "' 2>'" + err.string() + "'";
    int rc = std::system(cmd.c_str());
    return Run{WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(out), slurp(err)};
  }
};

bool mentions(const Run& r, const std::string& text) { return r.err.find(text) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(an_untrusted_project_runs_connects_and_creates_nothing) {
  Project p;
  const fs::path marker = p.dir / "MARKER";
  p.doc["interpreter"] = "sh -c touch${IFS}" + marker.string();
  p.doc["tunnels"] = {{{"name", "nb"}, {"localPort", 18888}, {"remotePort", 8888}}};
  p.save();
  for (const std::string cmd : {"sync", "pull outputs", "connect", "env", "doctor", "tunnel", "autostop --status", "watch", "ide vscode"}) {
    auto r = p.ferry(cmd);
    BOOST_TEST(r.status == 2, cmd << ": " << r.err);
    BOOST_TEST(mentions(r, "ferry trust-project " + p.dir.path().string()), cmd << ": " << r.err);
    BOOST_TEST(mentions(r, "--trust"), cmd << ": " << r.err);
  }
  auto run = p.ferry("run main.py");
  BOOST_TEST(run.status != 0);
  BOOST_TEST(mentions(run, "not trusted"), run.err);
  BOOST_TEST(!fs::exists(marker));
  BOOST_TEST(!fs::exists(p.sandbox()));
  BOOST_TEST(!fs::exists(p.dir / ".vscode"));
}

BOOST_AUTO_TEST_CASE(trust_is_recorded_by_the_flag_or_the_command_and_asked_again_after_a_change) {
  Project p;
  auto status = p.ferry("trust-project --status");
  BOOST_TEST(status.status == 1, status.out);
  auto synced = p.ferry("--trust sync");
  BOOST_TEST(synced.status == 0, synced.err);
  BOOST_TEST(mentions(synced, "trusting " + p.dir.path().string()));
  BOOST_TEST(fs::exists(p.sandbox() / "work" / "tp" / "main.py"));
  BOOST_TEST(p.ferry("trust-project --status").status == 0);
  BOOST_TEST(p.ferry("sync").status == 0);
  // The store is the user's, outside the repository.
  BOOST_TEST(!fs::exists(p.dir / ".ferry" / "trust"));
  BOOST_TEST(fs::exists(p.home / "config" / "ferry" / "trust" / "projects"));

  p.doc["interpreter"] = "/usr/bin/python3 -I";
  p.save();
  auto changed = p.ferry("sync");
  BOOST_TEST(changed.status == 2);
  BOOST_TEST(mentions(changed, "ferry.json changed since it was trusted"), changed.err);
  auto trusted = p.ferry("trust-project");
  BOOST_TEST(trusted.status == 0, trusted.err);
  BOOST_TEST(trusted.out.find("run the agent and your runs on THIS machine") != std::string::npos, trusted.out);
  BOOST_TEST(p.ferry("sync").status == 0);

  BOOST_TEST(p.ferry("trust-project --revoke").status == 0);
  BOOST_TEST(p.ferry("sync").status == 2);
}

BOOST_AUTO_TEST_CASE(init_trusts_the_ferry_json_it_writes) {
  Project p;
  fs::remove(p.dir / "ferry.json");
  auto init = p.ferry("init");
  BOOST_TEST(init.status == 0, init.err);
  BOOST_TEST(p.ferry("trust-project --status").status == 0);
}

BOOST_AUTO_TEST_CASE(a_trusted_folder_covers_the_projects_below_it) {
  Project p;
  BOOST_TEST(p.ferry("trust-project --folder " + p.dir.path().parent_path().string() + "/" + p.dir.path().filename().string()).status == 0);
  BOOST_TEST(p.ferry("sync").status == 0);
  auto list = p.ferry("trust-project --list");
  BOOST_TEST(list.out.find("folder   " + p.dir.path().string()) != std::string::npos, list.out);
  BOOST_TEST(p.ferry("trust-project --folder /").status == 2);
}

BOOST_AUTO_TEST_CASE(autostop_stop_is_never_armed_on_the_local_host) {
  Project p;
  BOOST_REQUIRE(p.ferry("trust-project").status == 0);
  auto stop = p.ferry("autostop 30m");
  BOOST_TEST(stop.status == 2);
  BOOST_TEST(mentions(stop, "ferry never arms it here"), stop.err);
  auto notify = p.ferry("autostop 30m --action notify");
  BOOST_TEST(notify.status == 0, notify.err);
  BOOST_TEST(p.ferry("autostop --cancel").status == 0);
}

BOOST_AUTO_TEST_CASE(a_repository_ssh_config_is_not_contacted_from_the_cli) {
  ferry::test::ConnectRecorder box;
  Project p;
  ferry::test::write_file(p.dir / "ssh_config", "Host evil\n  HostName 127.0.0.1\n  Port " + std::to_string(box.port()) +
                                                   "\n  StrictHostKeyChecking no\n");
  p.doc["host"] = "evil";
  p.doc["sshConfig"] = "ssh_config";
  p.save();
  for (const std::string cmd : {"sync", "connect", "trust evil", "doctor", "gpu", "tunnel 8888"}) {
    auto r = p.ferry(cmd);
    BOOST_TEST(r.status != 0, cmd);
    BOOST_TEST(mentions(r, "not trusted"), cmd << ": " << r.err);
  }
  BOOST_TEST(box.count() == 0);
  auto status = p.ferry("trust-project --status");
  BOOST_TEST(status.out.find("StrictHostKeyChecking is no") != std::string::npos, status.out);
  BOOST_TEST(status.out.find("a file inside this project") != std::string::npos, status.out);
}

BOOST_AUTO_TEST_CASE(on_a_terminal_the_question_is_asked_and_answered) {
  Project p;
  // script(1) gives ferry a terminal whose input is the answer.
  const std::string env = "XDG_CONFIG_HOME='" + (p.home / "config").string() + "' XDG_CACHE_HOME='" + (p.home / "cache").string() +
                          "' FERRY_AGENT='" FERRY_AGENT_PATH "'";
  auto on_terminal = [&](const std::string& answer) {
    const std::string cmd = "cd '" + p.dir.path().string() + "' && printf '" + answer + "\\n' | " + env +
                            " script -qec \"'" FERRY_BIN "' sync\" /dev/null > '" + (p.home / ".tty").string() + "' 2>&1";
    int rc = std::system(cmd.c_str());
    return Run{WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(p.home / ".tty"), ""};
  };
  auto no = on_terminal("n");
  BOOST_TEST(no.status == 2, no.out);
  BOOST_TEST(no.out.find("Trust " + p.dir.path().string() + "? [y/N]") != std::string::npos, no.out);
  BOOST_TEST(!fs::exists(p.sandbox()));
  auto yes = on_terminal("y");
  BOOST_TEST(yes.status == 0, yes.out);
  BOOST_TEST(fs::exists(p.sandbox() / "work" / "tp" / "main.py"));
  BOOST_TEST(p.ferry("trust-project --status").status == 0);
}

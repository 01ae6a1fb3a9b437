// End to end in a real VS Code: code-server (VS Code 1.139's workbench, its extension host on this
// machine) in Debian's Chromium, driven by playwright-core (ide-plugin/vscode/e2e/run-e2e.mjs). The
// .vsix is built from this tree with the ferry and both agents of this build inside and installed
// into a fresh profile; the workspace's ferry.json points at a real sshd on loopback. The driver
// checks the status bar (connected), a save (on the box), Run Current File (output and exit status
// in its terminal), a server a run starts on the box (its port forwarded by itself and offered with
// Open in Browser; gone after Stop), Debug Current File (paused at the breakpoint's line) and the
// Runs view; on a
// second project on the local host, training (live chart, plot.svg) and a tunnel; and on a third
// on a real Slurm cluster with `ferry alloc` held, the allocation in the status bar, a run as a
// step of it and the debugger paused on its node; it
// saves a screenshot of each step under the build tree (tests/e2e/vscode-artifacts/). The first run
// installs code-server and Node 24 from npm into ~/.cache/ferry-vscode-e2e (about 2 minutes); later
// runs reuse them.
#define BOOST_TEST_MODULE vscode_e2e
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/slurm_fixture.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/ferry_process.hpp"
#include "tests/support/spawned_process.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::test::SshdFixture;
using json = nlohmann::json;
using ferry::test::read_file;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(vscode_saves_runs_debugs_and_lists_runs) {
  SshdFixture f;
  f.trust_host_key();
  const fs::path project = f.dir() / "vscode-project";
  ferry::test::write_file(project / "ferry.json", json{{"name", "vscode-e2e"},
                                                       {"host", f.alias()},
                                                       {"sshConfig", f.ssh_config().string()},
                                                       {"interpreter", "/usr/bin/python3"},
                                                       {"env", {{"PYTHONUNBUFFERED", "1"}}},
                                                       {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}}
                                                      .dump(2) + "\n");
  ferry::test::write_file(project / "main.py", "import platform\nprint('hello from', platform.node())\n");
  // A server the run starts on the box: its port forwards itself, offered with Open in Browser.
  ferry::test::write_file(project / "serve_me.py",
                          "import http.server\n"
                          "with http.server.ThreadingHTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler) as s:\n"
                          "    print('serving on', s.server_address[1], flush=True)\n"
                          "    s.serve_forever()\n");
  ferry::test::write_file(project / "debug_me.py",
                          "def accumulate(n):\n"
                          "    total = 0\n"
                          "    for i in range(n):\n"
                          "        square = i * i\n"
                          "        total += square  # break here\n"
                          "    return total\n"
                          "\n"
                          "\n"
                          "if __name__ == '__main__':\n"
                          "    print('sum of squares below 5:', accumulate(5))\n");
  const int break_line = 5;
  const fs::path artifacts = FERRY_VSCODE_ARTIFACTS;

  // A second project on the local host (no SSH) for training and a tunnel, when ferry-train is built.
  const fs::path local_project = f.dir() / "vscode-local";
  ferry::test::write_file(local_project / "ferry.json", json{{"name", "vscode-e2e-local"},
                                                             {"host", "local"},
                                                             {"interpreter", "/usr/bin/python3"},
                                                             {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}}
                                                            .dump(2) + "\n");
  ferry::test::write_file(local_project / "train" / "quick.json",
                          json{{"model", {{"kind", "mlp"}, {"input_dim", 64}, {"hidden", {128}}, {"output_dim", 8}}},
                               {"data", {{"source", "synthetic"}, {"task", "classification"}, {"samples", 4096}, {"workers", 1}}},
                               {"optimizer", {{"kind", "adamw"}, {"lr", 0.003}}},
                               {"batch_size", 64},
                               {"max_steps", 3000},
                               {"device", "cpu"},
                               {"eval", {{"every_steps", 500}}},
                               {"log_every_steps", 50},
                               {"output_dir", "runs/quick"}}
                              .dump(2) + "\n");

  // A third project on a Slurm cluster (real slurmctld, two slurmd) whose login node is the same
  // sshd, with an allocation held before the window opens: runs and the debugger go to its node.
  ferry::test::SlurmCluster slurm;
  const fs::path slurm_project = f.dir() / "vscode-slurm";
  ferry::test::write_file(slurm_project / "ferry.json",
                          json{{"name", "vscode-e2e-slurm"},
                               {"host", f.alias()},
                               {"sshConfig", f.ssh_config().string()},
                               {"interpreter", "/usr/bin/python3"},
                               {"env", {{"PYTHONUNBUFFERED", "1"}, {"SLURM_CONF", slurm.conf().string()}}},
                               {"mappings", {{{"local", "."}, {"remote", "~/slurmproj"}}}},
                               {"slurm", {{"partition", "main"}, {"time", "30"}}}}
                              .dump(2) + "\n");
  ferry::test::write_file(slurm_project / "where.py", "import os\nprint('on the node, job', os.environ.get('SLURM_JOB_ID'))\n");
  ferry::test::write_file(slurm_project / "debug_me.py", read_file(project / "debug_me.py"));
  ferry::test::FerryProcess alloc(FERRY_BIN, slurm_project, {"alloc"});
  BOOST_REQUIRE_MESSAGE(alloc.wait(120s) == 0, alloc.out() + alloc.err());
  std::smatch held;
  const std::string alloc_out = alloc.out();
  BOOST_REQUIRE_MESSAGE(std::regex_search(alloc_out, held, std::regex(R"(allocation (\d+) on )")), alloc_out);

  // Only this run's results may be read: an earlier run's results.json is gone before the driver
  // starts, and the one read back must carry this run's id.
  const fs::path results = artifacts / "results.json";
  std::error_code rm_ec;
  fs::remove(results, rm_ec);
  BOOST_REQUIRE_MESSAGE(!fs::exists(results), "cannot remove the previous run's " << results << ": " << rm_ec.message());
  const std::string run_id = std::to_string(::getpid()) + "-" +
                             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());

  ferry::test::SpawnedProcess driver({"/usr/bin/env", "node", FERRY_VSCODE_E2E_SCRIPT}, project.string(),
                                     {{"FERRY_E2E_PROJECT", project.string()},
                                      {"FERRY_E2E_RUN_ID", run_id},
                                      {"FERRY_E2E_BOX", (f.home() / "proj").string()},
                                      {"FERRY_E2E_ARTIFACTS", artifacts.string()},
                                      {"FERRY_E2E_HOST", f.alias()},
                                      {"FERRY_E2E_BREAK_LINE", std::to_string(break_line)},
                                      {"FERRY_BIN_DIR", fs::path(FERRY_BIN).parent_path().string()},
                                      {"FERRY_E2E_LOCAL_PROJECT", local_project.string()},
                                      {"FERRY_TRAIN", FERRY_TRAIN_PATH},
                                      {"FERRY_E2E_SLURM_PROJECT", slurm_project.string()},
                                      {"FERRY_E2E_SLURM_JOB", held[1].str()},
                                      // The local host's sandbox (and ferry's local state) inside the fixture.
                                      {"XDG_CACHE_HOME", (f.dir() / "cache").string()},
                                      {"SSH_AUTH_SOCK", ""}});
  std::string out;
  while (auto line = driver.read_line(600s)) {
    BOOST_TEST_MESSAGE(*line);
    out += *line + "\n";
  }
  auto status = driver.wait(30s);
  BOOST_REQUIRE_MESSAGE(status.has_value(), "the driver did not finish:\n" << out);
  BOOST_REQUIRE_MESSAGE(fs::exists(results), "the driver wrote no results (scripts/setup.sh installs node, chromium, "
                                             "libkrb5-dev; the first run installs code-server from npm):\n" << out);
  const json r = json::parse(read_file(results));
  BOOST_REQUIRE_MESSAGE(r.value("runId", json()) == json(run_id),
                        "results.json is not this run's (runId " << r.value("runId", json()).dump() << ", want " << run_id << ")");
  BOOST_REQUIRE_MESSAGE(r.contains("steps") && r["steps"].is_array() && !r["steps"].empty(), "no steps in the results:\n" << r.dump(2));
  for (const auto& s : r["steps"]) BOOST_TEST(s["ok"].get<bool>(), s["name"].get<std::string>() + ": " + s["detail"].get<std::string>());
  BOOST_TEST(r.value("done", false), "not every step ran:\n" << out << "\nsshd:\n" << f.log());
  // The driver exits 0 only when every step passed; anything else (a crash before the results
  // were final, an exception outside the steps) fails here whatever results.json says.
  BOOST_TEST((WIFEXITED(*status) && WEXITSTATUS(*status) == 0),
             "the driver exited " << (WIFEXITED(*status) ? "with status " + std::to_string(WEXITSTATUS(*status))
                                                         : "on signal " + std::to_string(WTERMSIG(*status))) << ":\n" << out);

  // The edit is on the box, the run printed it, the debugger stopped on the breakpoint's line.
  BOOST_TEST(read_file(f.home() / "proj" / "main.py").find("edited in VS Code") != std::string::npos);
  BOOST_REQUIRE_MESSAGE(r.contains("pausedAt"), "the results say nowhere where the debugger paused:\n" << r.dump(2));
  BOOST_TEST(r["pausedAt"]["position"].get<std::string>().starts_with(std::to_string(break_line) + ":"), r["pausedAt"].dump());
  BOOST_TEST(r["screenshots"].size() >= 5u, r["screenshots"].dump());
  // On the cluster the debugger stopped on the same line, on the allocation's node.
  BOOST_REQUIRE_MESSAGE(r.contains("slurmPausedAt"), "nowhere a pause on the Slurm node:\n" << r.dump(2));
  BOOST_TEST(r["slurmPausedAt"]["position"].get<std::string>().starts_with(std::to_string(break_line) + ":"), r["slurmPausedAt"].dump());
  if (std::string(FERRY_TRAIN_PATH).empty()) {
    BOOST_TEST_MESSAGE("ferry-train is not built (FERRY_WITH_TORCH=OFF): training and tunnels were not driven");
  } else {
    BOOST_TEST(r.value("training", "").find("done") != std::string::npos, r.dump(2));
    BOOST_TEST(fs::exists(local_project / "train" / "runs" / "quick" / "plot.svg"));  // pulled at the end
  }
}

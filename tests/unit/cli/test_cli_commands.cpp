// `ferry init` and `ferry demo`, run as the real executable in temp dirs.
#define BOOST_TEST_MODULE cli_commands
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ferry/version.hpp"
#include "helper/deploy/project_config.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

using ferry::test::TempDir;

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

// Runs `ferry ARGS` in `cwd` through /bin/sh, capturing stdout and stderr into files.
Run run_ferry(const fs::path& cwd, const std::string& args, const std::string& env = "") {
  fs::path out = cwd / ".out", err = cwd / ".err";
  std::string cmd = "cd '" + cwd.string() + "' && " + env + " '" + FERRY_BIN + "' " + args + " >'" + out.string() +
                    "' 2>'" + err.string() + "'";
  int rc = std::system(cmd.c_str());
  Run r{WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(out), slurp(err)};
  fs::remove(out);
  fs::remove(err);
  return r;
}

}  // namespace

BOOST_AUTO_TEST_CASE(init_writes_a_valid_ferry_json) {
  TempDir t("ferry-cli");
  fs::create_directory(t.path() / "my proj");
  auto r = run_ferry(t.path() / "my proj", "init");
  BOOST_TEST(r.status == 0, r.err);
  BOOST_TEST(r.out.find("Wrote " + (t.path() / "my proj" / "ferry.json").string()) != std::string::npos, r.out);
  auto config = ferry::deploy::load_project(t.path() / "my proj");
  BOOST_REQUIRE_MESSAGE(config.has_value(), (config ? std::string() : config.error().to_string()));
  BOOST_TEST(config->host == "local");
  BOOST_TEST(config->name == "my-proj");
  BOOST_TEST(config->mappings.at(0).remote == "~/ferry/my-proj");
  BOOST_TEST(r.err.empty());
}

BOOST_AUTO_TEST_CASE(init_refuses_to_overwrite_without_force) {
  TempDir t("ferry-cli");
  BOOST_REQUIRE(run_ferry(t.path(), "init").status == 0);
  std::ofstream(t.path() / "ferry.json") << R"({"host": "keep-me"})";
  auto again = run_ferry(t.path(), "init --host other");
  BOOST_TEST(again.status == 1);
  BOOST_TEST(again.err.find("already exists") != std::string::npos, again.err);
  BOOST_TEST(again.err.find("--force") != std::string::npos);
  BOOST_TEST(slurp(t.path() / "ferry.json") == R"({"host": "keep-me"})");

  auto forced = run_ferry(t.path(), "init --force --host me@gpu:2222 --remote-root /workspace/x --name demo");
  BOOST_TEST(forced.status == 0, forced.err);
  auto config = ferry::deploy::load_project(t.path());
  BOOST_REQUIRE(config.has_value());
  BOOST_TEST(config->host == "me@gpu:2222");
  BOOST_TEST(config->name == "demo");
  BOOST_TEST(config->mappings.at(0).remote == "/workspace/x");
  // No temp files left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(t.path())) ++entries;
  BOOST_TEST(entries == 1);
}

BOOST_AUTO_TEST_CASE(init_for_a_slurm_cluster) {
  TempDir t("ferry-cli");
  auto r = run_ferry(t.path(), "init --host login.hpc --partition gpu --account proj1 --time 2:00:00 --gpus-per-node 4");
  BOOST_TEST(r.status == 0, r.err);
  BOOST_TEST(r.out.find("runs are Slurm jobs (partition gpu, account proj1, time 2:00:00, 4 GPU(s) per node") != std::string::npos, r.out);
  auto config = ferry::deploy::load_project(t.path());
  BOOST_REQUIRE_MESSAGE(config.has_value(), (config ? std::string() : config.error().to_string()));
  BOOST_REQUIRE(config->slurm.has_value());
  BOOST_TEST(config->slurm->partition == "gpu");
  BOOST_TEST(config->slurm->account == "proj1");
  BOOST_TEST(config->slurm->time == "2:00:00");
  BOOST_TEST(config->slurm->gpus_per_node == 4);
  // --slurm alone: the cluster's defaults.
  auto plain = run_ferry(t.path(), "init --force --host login.hpc --slurm");
  BOOST_TEST(plain.status == 0, plain.err);
  BOOST_TEST(plain.out.find("the cluster's defaults") != std::string::npos, plain.out);
  BOOST_TEST(ferry::deploy::load_project(t.path())->slurm.has_value());
  // Without it, no block.
  BOOST_REQUIRE(run_ferry(t.path(), "init --force --host login.hpc").status == 0);
  BOOST_TEST(!ferry::deploy::load_project(t.path())->slurm.has_value());
  BOOST_TEST(slurp(t.path() / "ferry.json").find("slurm") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(init_validates_before_writing) {
  TempDir t("ferry-cli");
  auto bad_host = run_ferry(t.path(), "init --host 'not a host'");
  BOOST_TEST(bad_host.status == 2);
  BOOST_TEST(bad_host.err.find("/host: expected") != std::string::npos, bad_host.err);
  auto bad_root = run_ferry(t.path(), "init --remote-root relative/dir");
  BOOST_TEST(bad_root.status == 2);
  BOOST_TEST(bad_root.err.find("/mappings/0/remote") != std::string::npos, bad_root.err);
  BOOST_TEST(!fs::exists(t.path() / "ferry.json"));
}

BOOST_AUTO_TEST_CASE(init_with_project_dir) {
  TempDir t("ferry-cli");
  fs::create_directory(t.path() / "elsewhere");
  auto r = run_ferry(t.path(), "--project elsewhere init --host box");
  BOOST_TEST(r.status == 0, r.err);
  BOOST_TEST(fs::exists(t.path() / "elsewhere" / "ferry.json"));
  BOOST_TEST(!fs::exists(t.path() / "ferry.json"));
}

BOOST_AUTO_TEST_CASE(demo_shows_the_agent_handshake) {
  TempDir t("ferry-cli");
  auto r = run_ferry(t.path(), "demo --pings 20 --sandbox '" + (t.path() / "sandbox").string() + "'");
  BOOST_TEST(r.status == 0, r.err);
  std::string magic = std::string("FERRY-AGENT ") + std::to_string(ferry::kAgentProtocolVersion) + " " + ferry::kVersion;
  BOOST_TEST(r.out.find(magic) != std::string::npos, r.out);
  BOOST_TEST(r.out.find("ferry-samples") != std::string::npos);  // samples/ferry.json was loaded
  BOOST_TEST(r.out.find((t.path() / "sandbox").string()) != std::string::npos);
  BOOST_TEST(r.out.find("exited with status 0") != std::string::npos, r.out);
  BOOST_TEST(fs::is_directory(t.path() / "sandbox"));
  // It ends with what its work would cost on a few catalog GPUs.
  const auto cost = r.out.find("Cost     this demo's sync + run + training took");
  BOOST_TEST_REQUIRE(cost != std::string::npos, r.out);
  for (const char* gpu : {"T4", "L4", "V100", "A100 40GB", "H100 80GB"}) BOOST_TEST(r.out.find(gpu, cost) != std::string::npos, gpu);
  BOOST_TEST(r.out.find("aws p3.2xlarge at $3.06/h", cost) != std::string::npos, r.out.substr(cost));
  BOOST_TEST(r.out.find("(an hour: $3.06)", cost) != std::string::npos);
}

BOOST_AUTO_TEST_CASE(demo_uses_the_xdg_cache_sandbox_by_default) {
  TempDir t("ferry-cli");
  auto r = run_ferry(t.path(), "demo --pings 1", "XDG_CACHE_HOME='" + t.path().string() + "/cache'");
  BOOST_TEST(r.status == 0, r.err);
  BOOST_TEST(fs::is_directory(t.path() / "cache" / "ferry" / "local" / "ferry-samples"));
}

BOOST_AUTO_TEST_CASE(demo_reports_a_bad_project_on_stderr) {
  TempDir t("ferry-cli");
  std::ofstream(t.path() / "ferry.json") << R"({"host": "local", "tunnels": [{"name": "x", "remotePort": 99999}]})";
  auto r = run_ferry(t.path(), "--project . demo");
  BOOST_TEST(r.status == 1);
  BOOST_TEST(r.err.find("/tunnels/0/remotePort: expected a port number from 1 to 65535") != std::string::npos, r.err);
}

BOOST_AUTO_TEST_CASE(every_command_has_help) {
  TempDir t("ferry-cli");
  for (const char* cmd : {"init --help", "demo --help", "--help"}) {
    auto r = run_ferry(t.path(), cmd);
    BOOST_TEST(r.status == 0, cmd);
    BOOST_TEST(r.out.find("Usage") != std::string::npos, cmd);
  }
}

// The exit-status table (helper/cli/exit_codes.hpp) is in `ferry --help`.
BOOST_AUTO_TEST_CASE(help_lists_the_exit_statuses) {
  TempDir t;
  auto r = run_ferry(t.path(), "--help");
  BOOST_TEST(r.out.find("Exit status: 0 ok; 1 failed; 2 bad arguments or ferry.json; 3 done") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("130 interrupted") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("255 when ferry itself failed") != std::string::npos, r.out);
}

// `ferry run ... | head`: once the reader of stdout is gone, ferry stops following (status 141,
// as a shell shows a pipeline member ended by SIGPIPE, which ferry now ignores) and says the run
// goes on. Before, on the local host (where SIGPIPE was already ignored) it streamed the whole
// run into the closed pipe and exited with the run's status.
BOOST_AUTO_TEST_CASE(run_stops_following_when_its_stdout_reader_goes_away) {
  TempDir t("ferry-cli");
  std::ofstream(t.path() / "ferry.json") << R"({"name": "pipe", "host": "local", "mappings": [{"local": ".", "remote": "~/w"}]})";
  const fs::path status = t.path() / ".status", err = t.path() / ".err";
  // 60 s is a hang (timeout's 124), not a slow box: the fixed ferry exits at its first write after
  // head left. The run prints ~39 MB, far more than the pipe holds.
  std::string cmd = "cd '" + t.path().string() + "' && ( XDG_CACHE_HOME='" + t.path().string() + "/cache' timeout 60 '" +
                    FERRY_BIN + "' run -- seq 5000000 2>'" + err.string() + "'; echo $? >'" + status.string() +
                    "' ) | head -c 64 >/dev/null";
  BOOST_REQUIRE(std::system(cmd.c_str()) == 0);
  BOOST_TEST(slurp(status) == "141\n", "status " << slurp(status) << "stderr: " << slurp(err));
  BOOST_TEST(slurp(err).find("stdout was closed") != std::string::npos, slurp(err));
  BOOST_TEST(slurp(err).find("which goes on") != std::string::npos, slurp(err));
}

// Issue #17's sweep: the CLI's errors name what failed, where (host, path) and the next step.
BOOST_AUTO_TEST_CASE(errors_name_what_failed_where_and_the_next_step) {
  TempDir t("ferry-cli");
  const std::string env = "XDG_CACHE_HOME='" + t.path().string() + "/cache'";
  std::ofstream(t.path() / "ferry.json") << R"({"name": "errs", "host": "local", "mappings": [{"local": ".", "remote": "~/w"}]})";
  auto has = [](const Run& r, const std::string& what) { return r.err.find(what) != std::string::npos; };

  auto logs = run_ferry(t.path(), "logs no-such-run", env);
  BOOST_TEST(logs.status == 2);
  BOOST_TEST(has(logs, "(on local sandbox "), logs.err);
  BOOST_TEST(has(logs, "`ferry runs` lists this project's runs there"), logs.err);

  auto pull = run_ferry(t.path(), "pull not-there", env);
  BOOST_TEST(pull.status == 1);
  BOOST_TEST(has(pull, "'not-there' is not under ~/w on local sandbox "), pull.err);
  BOOST_TEST(has(pull, "`ferry pull .` brings back all of it"), pull.err);

  auto cwd = run_ferry(t.path(), "run --cwd no-dir -- true", env);
  BOOST_TEST(cwd.status == 2);
  BOOST_TEST(has(cwd, "--cwd is relative to the mapping root " + t.path().string() + "/cache/ferry/local/errs/w"), cwd.err);

  auto missing = run_ferry(t.path(), "run --no-sync -- /no/such/program", env);
  BOOST_TEST(missing.status == 2);
  BOOST_TEST(has(missing, "install it there, give its full path"), missing.err);

  auto train = run_ferry(t.path(), "train no-such.json", env);
  BOOST_TEST(train.status == 2);
  BOOST_TEST(has(train, "no config file " + (t.path() / "no-such.json").string()), train.err);
  BOOST_TEST(has(train, "samples/train"), train.err);

  auto tunnel = run_ferry(t.path(), "tunnel 9", env);
  BOOST_TEST(tunnel.status == 2);
  BOOST_TEST(has(tunnel, "name one (--host HOST) or set \"host\" in ferry.json"), tunnel.err);

  // Nothing listens on 127.0.0.1:1: the connect failure says what to check.
  std::ofstream(t.path() / "ferry.json") << R"({"name": "errs", "host": "me@127.0.0.1:1", "mappings": [{"remote": "~/w"}]})";
  auto refused = run_ferry(t.path(), "sync", env);
  BOOST_TEST(refused.status == 1);
  BOOST_TEST(has(refused, "ferry sync: cannot reach ssh me@127.0.0.1:1: "), refused.err);
  BOOST_TEST(has(refused, "check the address/port, that the box is running"), refused.err);
  BOOST_TEST(has(refused, "`ferry doctor` checks each step"), refused.err);

  // A directory nobody may create files in (root included): the reason and where ferry.json goes.
  auto init = run_ferry(t.path(), "--project /proc init");
  BOOST_TEST(init.status == 1);
  BOOST_TEST(has(init, "ferry init: cannot write /proc/ferry.json: "), init.err);
  BOOST_TEST(has(init, "check that you may write there, or pass --project DIR"), init.err);
}

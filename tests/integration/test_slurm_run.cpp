// ferry run on a Slurm cluster (real slurmctld, two slurmd and munged: slurm_fixture), the login
// node being the sshd fixture: the job's stdout and stderr stream back apart and its exit status
// is ferry's; a job waiting for resources says why, then runs; Ctrl-C reaches the program on the
// compute node through scancel; `ferry kill -s KILL` cancels the job; `ferry doctor` checks the
// partition on the login node and that a compute node sees the mapping root (or says it could not
// check, the queue being busy); `ferry train` is a job (one node; two nodes as one training, ending
// with the parameters of `ferry train --hosts` on two hosts bit for bit; Ctrl-C checkpointing on the
// node and --resume continuing in a new job to the parameters of an uninterrupted job), `ferry runs`
// names the job, and a job goes on across a cut login link with its output resumed byte for byte;
// and ferry serve runs a job for the editor (run/start, run/output, run/exited, run/list), showing
// its wait as progress.
#define BOOST_TEST_MODULE slurm_run
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <regex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#ifdef FERRY_TRAIN_BIN
#include "tests/integration/checkpoint_tensors.hpp"
#endif
#include "tests/integration/slurm_project.hpp"
#include "tests/support/ferry_process.hpp"
#include "tests/support/loopback_port.hpp"
#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using ferry::test::read_file;
using ferry::test::write_file;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct Ferry : ferry::test::FerryProcess {
  Ferry(const fs::path& cwd, const std::vector<std::string>& args) : FerryProcess(FERRY_BIN, cwd, args) {}
};

// A cluster, its login node, and a project whose ferry.json names both.
struct Cluster : ferry::test::SlurmProject {
  Cluster() : SlurmProject("slurmproj", {{"partition", "main"}}) {}
};

// The job id in "ferry: Slurm job 12 submitted".
std::string job_id_in(const std::string& err) {
  std::smatch m;
  return std::regex_search(err, m, std::regex(R"(Slurm job (\d+) submitted)")) ? m[1].str() : "";
}

// A small CPU training config (ferry-train's JSON), `max_steps` long.
nlohmann::json tiny_training(int max_steps) {
  return {{"model", {{"kind", "mlp"}, {"input_dim", 16}, {"hidden", {32}}, {"output_dim", 4}}},
          {"data", {{"source", "synthetic"}, {"task", "classification"}, {"samples", 512}, {"workers", 0}}},
          {"optimizer", {{"kind", "adamw"}, {"lr", 0.003}}},
          {"batch_size", 32},
          {"max_steps", max_steps},
          {"log_every_steps", 10},
          {"threads", 1},
          {"seed", 7},
          {"device", "cpu"},
          {"output_dir", "out"}};
}

// The event lines of `ferry train --json`'s stdout.
std::vector<nlohmann::json> events_in(const std::string& out) {
  std::vector<nlohmann::json> events;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("event")) events.push_back(std::move(j));
  }
  return events;
}

#ifdef FERRY_TRAIN_BIN
// ferry-train's checkpoint of `step` under `dir` (its output_dir).
fs::path checkpoint_at(const fs::path& dir, int step) {
  char name[64];
  std::snprintf(name, sizeof name, "ckpt-%010d.ferry", step);
  return dir / "checkpoints" / name;
}

// Two trainings ended with the same tensors (parameters and AdamW's moments), bit for bit.
void expect_same_tensors(const fs::path& got_file, const fs::path& want_file) {
  BOOST_TEST_REQUIRE(fs::is_regular_file(got_file), got_file);
  BOOST_TEST_REQUIRE(fs::is_regular_file(want_file), want_file);
  const auto got = ferry::test::checkpoint_tensors(got_file);
  const auto want = ferry::test::checkpoint_tensors(want_file);
  BOOST_TEST_REQUIRE(got.size() == want.size());
  BOOST_TEST_REQUIRE(got.size() > 4u);  // weights, biases and AdamW's moments
  for (std::size_t i = 0; i < got.size(); ++i) {
    BOOST_TEST_INFO(got[i].first);
    BOOST_TEST(got[i].first == want[i].first);
    BOOST_TEST_REQUIRE(got[i].second.sizes() == want[i].second.sizes());
    BOOST_TEST_REQUIRE(got[i].second.nbytes() == want[i].second.nbytes());
    BOOST_TEST(std::memcmp(got[i].second.data_ptr(), want[i].second.data_ptr(), got[i].second.nbytes()) == 0);
  }
}
#endif

}  // namespace

BOOST_AUTO_TEST_CASE(a_run_is_a_job_whose_output_and_status_come_back) {
  Cluster c;
  write_file(c.project / "hello.py",
             "import os, sys\n"
             "print('out from', os.environ.get('SLURMD_NODENAME'), 'job', os.environ.get('SLURM_JOB_ID'))\n"
             "print('err line', file=sys.stderr)\n"
             "sys.exit(3)\n");
  Ferry run(c.project.path(), {"run", "--", "hello.py"});
  const int status = run.wait(120s);
  BOOST_TEST(status == 3, run.out() + run.err());
  const std::string id = job_id_in(run.err());
  BOOST_REQUIRE_MESSAGE(!id.empty(), run.err());
  BOOST_TEST(run.out().find("out from n") != std::string::npos, run.out());
  BOOST_TEST(run.out().find("job " + id) != std::string::npos, run.out());
  BOOST_TEST(run.out().find("err line") == std::string::npos, run.out());
  BOOST_TEST(run.err().find("err line") != std::string::npos, run.err());
  BOOST_TEST(run.err().find("job " + id + " ended FAILED (exit code 3:0)") != std::string::npos, run.err());
  // The script the job ran is the agent's, with the program as JSON: no shell.
  BOOST_TEST(c.slurm.job_state(id).state == "FAILED");
}

BOOST_AUTO_TEST_CASE(a_pending_job_says_why_and_its_place_then_runs) {
  Cluster c;
  // Both nodes held: the run's job waits, behind another that was queued first.
  const std::string holder = c.slurm.submit("-p main -N2 --exclusive --wrap 'sleep 300'");
  const std::string first = c.slurm.submit("-p main -N1 --wrap 'true'");
  write_file(c.project / "quick.py", "print('ran after the wait')\n");
  Ferry run(c.project.path(), {"run", "--", "quick.py"});
  BOOST_REQUIRE_MESSAGE(run.wait_out("), 1 job ahead", 60s, true), run.err());
  BOOST_TEST(std::regex_search(run.err(), std::regex(R"(job \d+ pending \((Resources|Priority)\), 1 job ahead)")), run.err());
  BOOST_TEST(c.slurm.run("scancel " + holder).status == 0);
  BOOST_TEST(run.wait(120s) == 0, run.out() + run.err());
  BOOST_TEST(run.out().find("ran after the wait") != std::string::npos, run.out());
}

// For the editor, a job's wait is progress ($/progress on a token the server makes): begun with
// its reason, ended when the job runs; its output is the editor's as ever.
BOOST_AUTO_TEST_CASE(the_editor_sees_a_pending_job_in_its_progress) {
  Cluster c;
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);  // the server in this process finds no agent beside it
  const std::string holder = c.slurm.submit("-p main -N2 --exclusive --wrap 'sleep 300'");
  // The job waits for the test's word once it runs, so that its follower sees it running.
  const fs::path go = c.login.home() / "proj" / "go";
  write_file(c.project / "quick.py", "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.05)\nprint('ran after the wait')\n");
  auto capabilities = ferry::test::ServeClient::ferry_capabilities();
  capabilities["window"] = {{"workDoneProgress", true}};
  ferry::test::ServeClient client(c.project.path(), capabilities);
  const auto answer = [](const nlohmann::json& request) {
    return request["method"] == "window/workDoneProgress/create" ? nlohmann::json{{"result", nullptr}} : nlohmann::json{
        {"error", {{"code", -32601}, {"message", "not here"}}}};
  };
  BOOST_REQUIRE(client.call("sync/push", nlohmann::json::object(), answer).contains("result"));
  auto started = client.call("run/start", {{"argv", {"quick.py"}}}, answer);
  BOOST_REQUIRE_MESSAGE(started.contains("result"), started.dump());
  const std::string run_id = started["result"]["id"];
  auto begun = client.wait_notification(
      [](const nlohmann::json& n) { return n["method"] == "$/progress" && n["params"]["value"].value("kind", "") == "begin"; }, 60s,
      answer);
  BOOST_REQUIRE(begun);
  const auto& value = (*begun)["params"]["value"];
  BOOST_TEST(value.value("title", "").starts_with("Slurm job "), begun->dump());
  BOOST_TEST(value.value("message", "").starts_with("pending ("), begun->dump());  // Priority, then Resources
  BOOST_TEST(c.slurm.run("scancel " + holder).status == 0);
  auto ended = client.wait_notification(
      [&](const nlohmann::json& n) {
        return n["method"] == "$/progress" && n["params"]["token"] == (*begun)["params"]["token"] &&
               n["params"]["value"].value("kind", "") == "end";
      },
      120s, answer);
  BOOST_REQUIRE(ended);
  BOOST_TEST((*ended)["params"]["value"].value("message", "").starts_with("running on n"), ended->dump());
  write_file(go, "");
  auto exited = client.wait_notification(
      [&](const nlohmann::json& n) { return n["method"] == "run/exited" && n["params"]["id"] == run_id; }, 120s, answer);
  ::unsetenv("FERRY_AGENT");
  BOOST_REQUIRE(exited);
  BOOST_TEST((*exited)["params"]["exitCode"] == 0, exited->dump());
}

BOOST_AUTO_TEST_CASE(ctrl_c_reaches_the_program_on_the_node) {
  Cluster c;
  write_file(c.project / "wait.py",
             "import signal, sys, time\n"
             "def stop(sig, frame):\n"
             "    print('got', signal.Signals(sig).name, flush=True)\n"
             "    sys.exit(5)\n"
             "signal.signal(signal.SIGINT, stop)\n"
             "print('ready', flush=True)\n"
             "time.sleep(300)\n");
  Ferry run(c.project.path(), {"run", "--", "wait.py"});
  BOOST_REQUIRE_MESSAGE(run.wait_out("ready", 90s), run.out() + run.err());
  BOOST_TEST(run.wait_out("running on n", 30s, true), run.err());
  run.signal(SIGINT);
  BOOST_TEST(run.wait(90s) == 5, run.out() + run.err());
  BOOST_TEST(run.out().find("got SIGINT") != std::string::npos, run.out());
  BOOST_TEST(run.err().find("SIGINT sent to job") != std::string::npos, run.err());
}

BOOST_AUTO_TEST_CASE(ferry_kill_cancels_the_job) {
  Cluster c;
  write_file(c.project / "long.py", "import time\nprint('started', flush=True)\ntime.sleep(300)\n");
  Ferry run(c.project.path(), {"run", "--detach", "--", "long.py"});
  BOOST_REQUIRE_MESSAGE(run.wait(60s) == 0, run.out() + run.err());
  std::smatch m;
  const std::string said = run.out() + run.err();
  BOOST_REQUIRE_MESSAGE(std::regex_search(said, m, std::regex(R"((\d{8}-\d{6}-[0-9a-f]{4}))")), said);
  const std::string run_id = m[1].str();
  // The job is submitted and running before it is killed.
  Ferry logs(c.project.path(), {"logs", "--follow", run_id});
  BOOST_REQUIRE_MESSAGE(logs.wait_out("started", 90s), logs.out() + logs.err());
  const std::string id = job_id_in(logs.err() + logs.out());
  // KILL ends the follower at once: the agent cancels the job first (TERM would reach the program).
  Ferry kill(c.project.path(), {"kill", "--signal", "KILL", run_id});
  BOOST_TEST(kill.wait(60s) == 0, kill.out() + kill.err());
  BOOST_REQUIRE_MESSAGE(!id.empty(), logs.out() + logs.err());
  const auto end = c.slurm.wait_job(id, 60s);
  std::string agent_log;
  for (const auto& e : fs::recursive_directory_iterator(c.login.home() / ".cache/ferry/agent"))
    if (e.path().filename() == "agent.log") agent_log += read_file(e.path());
  BOOST_TEST(end.state.starts_with("CANCELLED"), end.state << "; the agent's log:\n" << agent_log);
}

// The doctor's marker files (.ferry-doctor-<nonce>) left anywhere under the login node's home.
std::vector<std::string> doctor_markers(const fs::path& home) {
  std::vector<std::string> left;
  for (const auto& e : fs::recursive_directory_iterator(home))
    if (e.path().filename().string().starts_with(".ferry-doctor-")) left.push_back(e.path().string());
  return left;
}

// The slurm line from the login node, and the slurm nodes line from a compute node that read back
// a marker written in the mapping root and in ~/.cache/ferry; a partition the cluster lacks fails,
// and the node check is then not made.
BOOST_AUTO_TEST_CASE(doctor_checks_the_partition_on_the_login_node) {
  Cluster c;
  Ferry doctor(c.project.path(), {"doctor"});
  doctor.wait(120s);
  BOOST_TEST(std::regex_search(doctor.out(), std::regex(R"(\[pass\] slurm: \S+ [0-9.]+, partition main up with 2 node\(s\))")),
             doctor.out() + doctor.err());
  BOOST_TEST(std::regex_search(doctor.out(), std::regex(R"(\[pass\] slurm nodes: mapping root ~/proj is visible on compute node n[12], and so is ~/\.cache/ferry\n)")),
             doctor.out());
  BOOST_TEST(doctor_markers(c.login.home()).empty());
  auto config = nlohmann::json::parse(read_file(c.project / "ferry.json"));
  config["slurm"]["partition"] = "gpu";
  write_file(c.project / "ferry.json", config.dump(2));
  Ferry again(c.project.path(), {"--trust", "doctor"});
  BOOST_TEST(again.wait(120s) == 1);
  BOOST_TEST(again.out().find("[FAIL] slurm: ") != std::string::npos, again.out());
  BOOST_TEST(again.out().find("no partition \"gpu\" (there are: main, second)") != std::string::npos, again.out());
  BOOST_TEST(again.out().find("[warn] slurm nodes: not checked: the slurm line above is not a pass") != std::string::npos, again.out());
}

// Both nodes held by a job: the node probe does not start within its wait, and the doctor says the
// check was not made rather than hang; once the nodes are free it passes.
BOOST_AUTO_TEST_CASE(doctor_says_when_the_queue_starts_no_probe) {
  Cluster c;
  const std::string holder = c.slurm.submit("-p main -N2 --exclusive --wrap 'sleep 300'");
  BOOST_REQUIRE(ferry::test::eventually([&] { return c.slurm.job_state(holder).state == "RUNNING"; }, 60s));
  Ferry busy(c.project.path(), {"doctor"});
  busy.wait(180s);
  BOOST_TEST(busy.out().find("[pass] slurm: ") != std::string::npos, busy.out() + busy.err());
  BOOST_TEST(busy.out().find("[warn] slurm nodes: not checked: the queue did not start a probe within 15 s\n") != std::string::npos,
             busy.out());
  BOOST_TEST(doctor_markers(c.login.home()).empty());
  BOOST_TEST(c.slurm.run("scancel " + holder).status == 0);
  BOOST_TEST(c.slurm.wait_job(holder, 60s).state.starts_with("CANCELLED"));
  Ferry idle(c.project.path(), {"doctor"});
  idle.wait(180s);
  BOOST_TEST(std::regex_search(idle.out(), std::regex(R"(\[pass\] slurm nodes: mapping root ~/proj is visible on compute node n[12], and so is ~/\.cache/ferry\n)")),
             idle.out());
  BOOST_TEST(doctor_markers(c.login.home()).empty());
}

#ifdef FERRY_TRAIN_BIN
// `ferry train` on a Slurm project: the training is a job (ferry-train on a node, CPU), its events
// stream back through the job's output file and its outputs are pulled.
BOOST_AUTO_TEST_CASE(ferry_train_is_a_job_whose_events_stream_back) {
  Cluster c;
  write_file(c.project / "cfg" / "tiny.json", tiny_training(20).dump());
  Ferry train(c.project.path(), {"train", "cfg/tiny.json", "--json", "--trainer", FERRY_TRAIN_BIN});
  BOOST_TEST(train.wait(180s) == 0, train.out() + train.err());
  const auto events = events_in(train.out());
  BOOST_REQUIRE(!events.empty());
  BOOST_TEST(events.front()["event"] == "start");
  BOOST_TEST(events.back()["event"] == "done");
  const std::string id = job_id_in(train.err());
  BOOST_REQUIRE_MESSAGE(!id.empty(), train.err());
  BOOST_TEST(c.slurm.job_state(id).state == "COMPLETED");
  BOOST_TEST(fs::is_regular_file(c.project / "cfg" / "out" / "checkpoints" / "ckpt-0000000020.ferry"));
}
#endif

// ferry runs names each run's job and where it stands: running on its node with its time left
// while it runs, then Slurm's final state (COMPLETED, FAILED ...).
BOOST_AUTO_TEST_CASE(ferry_runs_names_the_job_and_its_state) {
  Cluster c;
  auto project = nlohmann::json::parse(read_file(c.project / "ferry.json"));
  project["slurm"]["time"] = "10";  // a time limit, so that a running job has time left
  write_file(c.project / "ferry.json", project.dump(2));
  write_file(c.project / "one.py", "print('one')\n");
  Ferry run(c.project.path(), {"run", "--", "one.py"});
  BOOST_REQUIRE_MESSAGE(run.wait(120s) == 0, run.out() + run.err());
  const std::string id = job_id_in(run.err());
  Ferry runs(c.project.path(), {"runs"});
  BOOST_TEST(runs.wait(60s) == 0, runs.err());
  BOOST_TEST(runs.out().find("[slurm job " + id + " COMPLETED] /usr/bin/python3 -u one.py") != std::string::npos, runs.out());
  Ferry as_json(c.project.path(), {"runs", "--json"});
  BOOST_TEST(as_json.wait(60s) == 0, as_json.err());
  const auto list = nlohmann::json::parse(as_json.out());
  BOOST_REQUIRE(list.is_array() && !list.empty());
  BOOST_TEST(list[0].value("slurmJob", "") == id, list.dump());
  BOOST_TEST(list[0]["slurmState"].value("state", "") == "COMPLETED", list.dump());

  // A job that waits for the test's word once it runs: seen running, on its node, with time left.
  write_file(c.project / "wait.py", "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.05)\n");
  Ferry detached(c.project.path(), {"run", "--detach", "--", "wait.py"});
  BOOST_REQUIRE_MESSAGE(detached.wait(120s) == 0, detached.err());
  std::string listed;
  const bool running = ferry::test::eventually(
      [&] {
        Ferry now(c.project.path(), {"runs"});
        now.wait(60s);
        listed = now.out();
        return std::regex_search(listed, std::regex(R"(\[slurm job \d+ RUNNING on n\d, [0-9:-]+ left\] /usr/bin/python3 -u wait\.py)"));
      },
      60s);
  BOOST_TEST(running, listed);
  write_file(c.login.home() / "proj" / "go", "");
}

#ifdef FERRY_TRAIN_BIN
// `--nodes 2` (ferry.json's slurm.nodes for one training): srun starts ferry-train once on each
// node, which take their ranks from Slurm's
// variables (launcher_env) and train as one (Gloo on CPU). The test's node names do not resolve,
// so MASTER_ADDR is the loopback, as a site would set it where they do not either. The training
// ends with the parameters of the same config trained by `ferry train --hosts` on two hosts (the
// login node's sshd and a second one on 127.0.0.2), bit for bit.
BOOST_AUTO_TEST_CASE(two_nodes_train_as_one_job_as_hosts_do) {
  Cluster c;
  auto project = nlohmann::json::parse(read_file(c.project / "ferry.json"));
  project["env"]["MASTER_ADDR"] = "127.0.0.1";
  project["env"]["MASTER_PORT"] = std::to_string(ferry::test::free_loopback_port());
  write_file(c.project / "ferry.json", project.dump(2));
  write_file(c.project / "cfg" / "tiny.json", tiny_training(20).dump());
  Ferry train(c.project.path(), {"train", "cfg/tiny.json", "--nodes", "2", "--json", "--trainer", FERRY_TRAIN_BIN});
  BOOST_TEST(train.wait(240s) == 0, train.out() + train.err());
  const std::string id = job_id_in(train.err());
  BOOST_REQUIRE_MESSAGE(!id.empty(), train.err());
  const auto state = c.slurm.job_state(id);
  BOOST_TEST(state.state == "COMPLETED");
  BOOST_TEST(state.nodes == "n[1-2]", state.nodes);
  // One training: the start event says two processes.
  const auto events = events_in(train.out());
  BOOST_REQUIRE(!events.empty());
  BOOST_TEST(events.front()["event"] == "start");
  BOOST_TEST(events.front().value("world_size", 0) == 2, events.front().dump());

  // The same config with `ferry train --hosts box-a,box-b`: a project of its own (no slurm block)
  // on the login node's sshd as box-a and a second sshd as box-b, one rank on each.
  ferry::test::SshdOptions at_b;
  at_b.address = "127.0.0.2";
  ferry::test::SshdFixture box_b(at_b);
  box_b.trust_host_key();
  ferry::test::TempDir hosts{"ferry-slurm-hosts"};
  write_file(hosts / "ssh_config", c.login.ssh_config_as("box-a") + "\n" + box_b.ssh_config_as("box-b") + "\n");
  write_file(hosts / "ferry.json", nlohmann::json{{"name", "hostsproj"},
                                                  {"host", "box-a"},
                                                  {"sshConfig", (hosts / "ssh_config").string()},
                                                  {"mappings", {{{"local", "."}, {"remote", "~/hostsproj"}}}}}
                                       .dump(2));
  write_file(hosts / "cfg" / "tiny.json", tiny_training(20).dump());
  Ferry ranks(hosts.path(), {"train", "cfg/tiny.json", "--hosts", "box-a,box-b", "--json", "--trainer", FERRY_TRAIN_BIN,
                             "--master-port", std::to_string(ferry::test::free_loopback_port())});
  BOOST_TEST_REQUIRE(ranks.wait(240s) == 0, ranks.out() + ranks.err());
  const auto hosts_events = events_in(ranks.out());
  BOOST_REQUIRE(!hosts_events.empty());
  BOOST_TEST(hosts_events.front().value("world_size", 0) == 2, hosts_events.front().dump());
  BOOST_TEST(fs::exists(box_b.home() / "hostsproj" / "cfg" / "tiny.json"));  // rank 1 ran on box-b
  expect_same_tensors(checkpoint_at(c.project / "cfg" / "out", 20), checkpoint_at(hosts / "cfg" / "out", 20));
}
#endif

#ifdef FERRY_TRAIN_BIN
// Ctrl-C on a training job: SIGINT reaches ferry-train on the node (scancel --signal), which
// checkpoints and stops; the checkpoint comes back, and --resume continues from it in a new job,
// ending with the parameters (and optimizer state) of an uninterrupted job of the same config, bit
// for bit.
BOOST_AUTO_TEST_CASE(ctrl_c_checkpoints_and_resume_continues_in_a_new_job) {
  Cluster c;
  nlohmann::json config = tiny_training(3000);
  config["model"] = {{"kind", "mlp"}, {"input_dim", 64}, {"hidden", {256, 256}}, {"output_dim", 4}};
  config["data"]["samples"] = 4096;
  config["batch_size"] = 64;
  write_file(c.project / "tiny.json", config.dump());
  const std::vector<std::string> args = {"train", "tiny.json", "--json", "--trainer", FERRY_TRAIN_BIN};
  std::int64_t stopped_at = -1;
  std::string first_job;
  {
    Ferry train(c.project.path(), args);
    BOOST_REQUIRE_MESSAGE(train.wait_out("\"event\":\"step\"", 120s), train.out() + train.err());
    train.signal(SIGINT);
    BOOST_TEST(train.wait(120s) == 130, train.out() + train.err());
    for (const auto& e : events_in(train.out()))
      if (e["event"] == "checkpoint") stopped_at = e.value("step", std::int64_t{-1});
    first_job = job_id_in(train.err());
  }
  BOOST_REQUIRE_MESSAGE(stopped_at > 0 && stopped_at < 3000, "checkpoint at " << stopped_at);
  BOOST_TEST(fs::exists(c.project / "out" / "checkpoints"));
  std::vector<std::string> resume = args;
  resume.push_back("--resume");
  Ferry again(c.project.path(), resume);
  BOOST_TEST(again.wait(300s) == 0, again.out() + again.err());
  nlohmann::json start, done;
  for (const auto& e : events_in(again.out())) {
    if (e["event"] == "start") start = e;
    if (e["event"] == "done") done = e;
  }
  BOOST_TEST(start.value("resumed", false), start.dump());
  BOOST_TEST(start.value("step", std::int64_t{0}) == stopped_at);
  BOOST_TEST(!done.is_null());
  const std::string second_job = job_id_in(again.err());
  BOOST_TEST((!second_job.empty() && second_job != first_job), first_job << " then " << second_job);

  // The same config uninterrupted, as a job of its own (its outputs in ref/out).
  write_file(c.project / "ref" / "tiny.json", config.dump());
  Ferry reference(c.project.path(), {"train", "ref/tiny.json", "--json", "--trainer", FERRY_TRAIN_BIN});
  BOOST_TEST_REQUIRE(reference.wait(300s) == 0, reference.out() + reference.err());
  for (const auto& e : events_in(reference.out()))
    if (e["event"] == "start") BOOST_TEST(!e.value("resumed", false), e.dump());
  expect_same_tensors(checkpoint_at(c.project / "out", 3000), checkpoint_at(c.project / "ref" / "out", 3000));
}
#endif

// What would run on the login node instead of a compute node is refused, saying why.
BOOST_AUTO_TEST_CASE(train_hosts_autostop_and_spot_refuse_a_slurm_host) {
  Cluster c;
  // Autostop and the spot watch are a cloud box's: never armed on a cluster's login node.
  Ferry autostop(c.project.path(), {"autostop", "30m"});
  BOOST_TEST(autostop.wait(60s) == 2, autostop.err());
  BOOST_TEST(autostop.err().find("ferry never arms autostop there") != std::string::npos, autostop.err());
  Ferry spot(c.project.path(), {"spot", "aws"});
  BOOST_TEST(spot.wait(60s) == 2, spot.err());
  BOOST_TEST(spot.err().find("no cloud spot notice to watch there") != std::string::npos, spot.err());
  write_file(c.project / "tiny.json", "{}");
  Ferry ranks(c.project.path(), {"train", "tiny.json", "--hosts", "a,b"});
  BOOST_TEST(ranks.wait(60s) == 2, ranks.err());
  BOOST_TEST(ranks.err().find("ranks are started by srun, not by ferry") != std::string::npos, ranks.err());
}

// The login link dies while a job runs: the job (under slurmd) and its follower (in the agent's
// supervisor, a session of its own) go on; ferry reconnects and the output resumes at the next
// byte, neither lost nor doubled, with the job's status at the end.
BOOST_AUTO_TEST_CASE(a_job_goes_on_across_a_cut_login_link) {
  Cluster c;
  write_file(c.project / "job.py",
             "import sys\n"
             "for i in range(3): print('before', i)\n"
             "with open('gate') as g: g.read()\n"
             "for i in range(3): print('after', i)\n"
             "sys.exit(7)\n");
  const fs::path remote = c.login.home() / "proj";
  fs::create_directories(remote);
  BOOST_REQUIRE(::mkfifo((remote / "gate").c_str(), 0600) == 0);
  Ferry run(c.project.path(), {"run", "--", "job.py"});
  BOOST_REQUIRE_MESSAGE(run.wait_out("before 2\n", 90s), run.out() + run.err());
  c.login.kill_all();
  BOOST_REQUIRE_MESSAGE(run.wait_out("lost the connection", 30s, true), run.err());
  c.login.start();
  {
    const int gate = ::open((remote / "gate").c_str(), O_WRONLY);  // blocks until the job reads
    BOOST_REQUIRE(gate >= 0);
    ::close(gate);
  }
  BOOST_TEST(run.wait(120s) == 7, run.out() + run.err());
  BOOST_TEST(run.out() == "before 0\nbefore 1\nbefore 2\nafter 0\nafter 1\nafter 2\n");
  BOOST_TEST(run.err().find("reconnected") != std::string::npos, run.err());
}

// The same from an editor: `ferry serve` (in process, spoken to as an LSP client speaks) starts
// the run as a job; its output and its exit status arrive as run/output and run/exited, and
// run/list names the job.
BOOST_AUTO_TEST_CASE(ferry_serve_runs_a_job_for_the_editor) {
  Cluster c;
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);  // the server in this process finds no agent beside it
  write_file(c.project / "job.py", "import sys\nprint('from the editor', flush=True)\nsys.exit(4)\n");
  ferry::test::ServeClient client(c.project.path());
  BOOST_REQUIRE(client.call("sync/push", nlohmann::json::object()).contains("result"));
  auto started = client.call("run/start", {{"argv", {"job.py"}}});
  BOOST_REQUIRE_MESSAGE(started.contains("result"), started.dump());
  const std::string run_id = started["result"]["id"];
  auto exited = client.wait_notification(
      [&](const nlohmann::json& n) { return n["method"] == "run/exited" && n["params"]["id"] == run_id; }, 120s);
  ::unsetenv("FERRY_AGENT");
  BOOST_REQUIRE(exited);
  BOOST_TEST((*exited)["params"]["exitCode"] == 4, exited->dump());
  std::string out, err;
  for (const auto& n : client.notifications)
    if (n["method"] == "run/output" && n["params"]["id"] == run_id)
      (n["params"]["stream"] == "stdout" ? out : err) += n["params"].value("text", "");
  BOOST_TEST(out == "from the editor\n", out);
  BOOST_TEST(err.find("Slurm job") != std::string::npos, err);
  auto list = client.call("run/list", nlohmann::json::object());
  BOOST_REQUIRE(list.contains("result"));
  BOOST_TEST(list["result"]["runs"][0].value("slurmJob", "") == job_id_in(err), list.dump());
}

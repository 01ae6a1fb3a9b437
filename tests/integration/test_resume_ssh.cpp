// A spot reclaim and `ferry resume` on another box, all real: two sshd fixtures (box-a on
// 127.0.0.1, box-b on 127.0.0.2), a metadata endpoint on 127.0.0.1 (tests/support/
// metadata_server.py) watched by box-a's agent (`ferry spot URL`), and the real ferry-train on CPU.
// The notice makes the running training checkpoint and stop; `ferry resume RUN --host box-b`
// pulls that checkpoint from box-a, syncs the project to box-b and finishes there with the final
// parameters and optimizer state of an uninterrupted run, bit for bit. Also: a gone old box
// (--config and the checkpoint already in the project), and the refusals of bad input.
#define BOOST_TEST_MODULE resume_ssh
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "tests/integration/checkpoint_tensors.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/spawned_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using ferry::test::checkpoint_tensors;
using ferry::test::SshdFixture;
using ferry::test::SshdOptions;
using nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr int kSteps = 8000;  // a few seconds on CPU: the notice comes long before the end

int status_of(std::optional<int> st) {
  BOOST_TEST_REQUIRE(st.has_value());
  return WIFEXITED(*st) ? WEXITSTATUS(*st) : 128 + WTERMSIG(*st);
}

SshdOptions at(const std::string& address) {
  SshdOptions o;
  o.address = address;
  return o;
}

// Two boxes in one ssh config, a project on box-a, and the metadata endpoint.
struct Setup {
  SshdFixture a{at("127.0.0.1")};
  SshdFixture b{at("127.0.0.2")};
  ferry::test::TempDir dir{"ferry-resume"};
  fs::path project = dir / "project";
  fs::path ssh_config = dir / "ssh_config";
  std::string server_pid;
  Setup() {
    a.trust_host_key();
    b.trust_host_key();
    std::string text = a.ssh_config_as("box-a") + "\n" + b.ssh_config_as("box-b") + "\n";
    // box-gone: box-a's block on a port nothing listens on (a reclaimed box refuses at once).
    std::string gone = a.ssh_config_as("box-gone");
    gone.replace(gone.find("  Port " + std::to_string(a.port())), 7 + std::to_string(a.port()).size(),
                 "  Port " + std::to_string(ferry::test::pick_free_port()));
    ferry::test::write_file(ssh_config, text + gone + "\n");
    ferry::test::write_file(project / "ferry.json", json{{"name", "resume"},
                                                         {"host", "box-a"},
                                                         {"sshConfig", ssh_config.string()},
                                                         {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}}
                                                        .dump());
    ferry::test::write_file(project / "cfg" / "tiny.json", config().dump());
  }
  ~Setup() {
    if (!server_pid.empty()) ::kill(std::stoi(server_pid), SIGKILL);
  }
  static json config() {
    return {{"model", {{"kind", "mlp"}, {"input_dim", 64}, {"hidden", {128, 128}}, {"output_dim", 4}}},
            {"data", {{"source", "synthetic"}, {"task", "classification"}, {"samples", 4096}, {"workers", 0}}},
            {"optimizer", {{"kind", "adamw"}, {"lr", 0.003}}},
            {"batch_size", 64},
            {"max_steps", kSteps},
            {"log_every_steps", 10},
            {"threads", 1},
            {"seed", 11},
            {"device", "cpu"},
            {"output_dir", "out"}};
  }
  int start_metadata_server() {
    const std::string cmd = "/usr/bin/python3 '" FERRY_METADATA_SERVER "' --port-file '" + (dir / "port").string() +
                            "' --notice-file '" + (dir / "notice").string() + "' >/dev/null 2>&1 & echo $! > '" +
                            (dir / "pid").string() + "'";
    BOOST_REQUIRE(std::system(cmd.c_str()) == 0);
    BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(dir / "port"); }, 20s));
    server_pid = ferry::test::read_file(dir / "pid");
    return std::stoi(ferry::test::read_file(dir / "port"));
  }
  std::vector<std::string> ferry(std::vector<std::string> args) const {
    args.insert(args.begin(), FERRY_BIN);
    return args;
  }
};

std::string step_name(int step) {
  char name[64];
  std::snprintf(name, sizeof name, "ckpt-%010d.ferry", step);
  return name;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_spot_notice_checkpoints_and_resume_on_another_box_ends_bit_identical) {
  Setup s;
  // The uninterrupted run of the same config, for the final parameters: on box-b through ssh, as
  // the agent's runs are (the box's environment, whose BLAS settings may differ from this shell's).
  const fs::path ref = s.b.home() / "reference";
  ferry::test::write_file(ref / "tiny.json", Setup::config().dump());
  ferry::test::run_command("ssh -F " + s.ssh_config.string() + " box-b 'cd " + ref.string() + " && " + FERRY_TRAIN_BIN +
                           " tiny.json > log 2>&1'");
  BOOST_TEST_REQUIRE(fs::is_regular_file(ref / "out" / "checkpoints" / step_name(kSteps)));

  // box-a's agent watches the metadata endpoint (404 until the notice file exists).
  const int port = s.start_metadata_server();
  ferry::test::SpawnedProcess spot(
      s.ferry({"spot", "http://127.0.0.1:" + std::to_string(port) + "/latest/meta-data/spot/instance-action", "--poll", "0.1"}),
      s.project.string());
  BOOST_TEST_REQUIRE(status_of(spot.wait(60s)) == 0);

  ferry::test::SpawnedProcess start(s.ferry({"train", "cfg/tiny.json", "--detach", "--trainer", FERRY_TRAIN_BIN}), s.project.string());
  auto id = start.read_line(120s);
  BOOST_TEST_REQUIRE(status_of(start.wait(60s)) == 0);
  BOOST_TEST_REQUIRE(id.has_value());

  // Follow it; once it steps, the cloud announces the reclaim.
  ferry::test::SpawnedProcess attach(s.ferry({"attach", *id}), s.project.string());
  std::string text;
  bool noticed = false;
  json interrupted;
  while (auto line = attach.read_line(120s)) {
    text += *line + "\n";
    auto j = json::parse(*line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    if (!noticed && j.value("event", "") == "step") {
      ferry::test::write_file(s.dir / "notice", R"({"action": "terminate", "time": "2026-12-01T18:02:00Z"})");
      noticed = true;
    }
    if (j.value("event", "") == "interrupted") interrupted = j;
  }
  BOOST_TEST_INFO(text);
  BOOST_TEST_REQUIRE(status_of(attach.wait(60s)) == 143);  // SIGTERM from the spot watcher, after a checkpoint
  BOOST_TEST_REQUIRE(interrupted.value("signal", "") == "SIGTERM");
  const int stopped_at = interrupted.value("step", -1);
  BOOST_TEST_MESSAGE("the notice stopped the run at step " << stopped_at << " of " << kSteps);
  BOOST_TEST_REQUIRE(stopped_at > 0);
  BOOST_TEST_REQUIRE(stopped_at < kSteps);
  // The checkpoint is on box-a only (a detached run pulls nothing).
  BOOST_TEST_REQUIRE(fs::is_regular_file(s.a.home() / "proj" / "cfg" / "out" / "checkpoints" / step_name(stopped_at)));
  BOOST_TEST_REQUIRE(!fs::exists(s.project / "cfg" / "out" / "checkpoints"));

  // box-a recorded the notice and says how to go on.
  ferry::test::SpawnedProcess status(s.ferry({"spot", "--status"}), s.project.string());
  std::string said;
  while (auto line = status.read_line(60s)) said += *line + "\n";
  BOOST_TEST_REQUIRE(status_of(status.wait(60s)) == 0);
  BOOST_TEST(said.find("continue one on another box: ferry resume " + *id + " --host NEWBOX") != std::string::npos, said);

  // Resume on box-b: the checkpoint comes from box-a through the project.
  ferry::test::SpawnedProcess resume(s.ferry({"resume", *id, "--host", "box-b", "--trainer", FERRY_TRAIN_BIN, "--json"}),
                                     s.project.string());
  json started;
  std::string events;
  while (auto line = resume.read_line(300s)) {
    events += *line + "\n";
    auto j = json::parse(*line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.value("event", "") == "start") started = j;
  }
  BOOST_TEST_INFO(events);
  BOOST_TEST_REQUIRE(status_of(resume.wait(60s)) == 0);
  BOOST_TEST(started.value("resumed", false));
  BOOST_TEST(started.value("step", -1) == stopped_at);
  const fs::path final_b = s.b.home() / "proj" / "cfg" / "out" / "checkpoints" / step_name(kSteps);
  BOOST_TEST_REQUIRE(fs::is_regular_file(final_b));  // it finished on box-b
  BOOST_TEST(!fs::exists(s.a.home() / "proj" / "cfg" / "out" / "checkpoints" / step_name(kSteps)));
  BOOST_TEST(fs::is_regular_file(s.project / "cfg" / "out" / "checkpoints" / step_name(kSteps)));  // and came back

  auto got = checkpoint_tensors(final_b);
  auto want = checkpoint_tensors(ref / "out" / "checkpoints" / step_name(kSteps));
  BOOST_TEST_REQUIRE(got.size() == want.size());
  BOOST_TEST_REQUIRE(got.size() > 4u);  // weights, biases and AdamW's moments
  for (std::size_t i = 0; i < got.size(); ++i) {
    BOOST_TEST_INFO(got[i].first);
    BOOST_TEST(got[i].first == want[i].first);
    BOOST_TEST(got[i].second.sizes() == want[i].second.sizes());
    BOOST_TEST(std::memcmp(got[i].second.data_ptr(), want[i].second.data_ptr(), got[i].second.nbytes()) == 0);
  }
}

// Bad input loses nothing and says what to do: an unknown run, a run that is not a training.
BOOST_AUTO_TEST_CASE(resume_refuses_unknown_and_non_training_runs) {
  Setup s;
  ferry::test::SpawnedProcess unknown({"/bin/sh", "-c", std::string("exec '") + FERRY_BIN + "' resume 20991231-000000-dead 2>&1"},
                                      s.project.string());
  std::string text;
  while (auto line = unknown.read_line(60s)) text += *line + "\n";
  BOOST_TEST(status_of(unknown.wait(60s)) == 2);
  BOOST_TEST(text.find("no run 20991231-000000-dead on box-a") != std::string::npos, text);

  ferry::test::SpawnedProcess plain(s.ferry({"run", "--", "/bin/true"}), s.project.string());
  BOOST_TEST_REQUIRE(status_of(plain.wait(60s)) == 0);
  ferry::test::SpawnedProcess list(s.ferry({"runs", "--json"}), s.project.string());
  std::string listed;
  while (auto line = list.read_line(60s)) listed += *line;
  BOOST_TEST_REQUIRE(status_of(list.wait(60s)) == 0);
  auto runs = json::parse(listed, nullptr, false);
  BOOST_TEST_REQUIRE((runs.is_array() && !runs.empty()), listed);
  const std::string id = runs.back().value("id", "");
  ferry::test::SpawnedProcess refused({"/bin/sh", "-c", std::string("exec '") + FERRY_BIN + "' resume " + id + " 2>&1"},
                                      s.project.string());
  text.clear();
  while (auto line = refused.read_line(60s)) text += *line + "\n";
  BOOST_TEST(status_of(refused.wait(60s)) == 2);
  BOOST_TEST(text.find("is not a ferry-train run") != std::string::npos, text);
}

// The old box is gone: without --config ferry says what to give; with it, the checkpoint that
// `ferry train` pulled when the run ended is what the new box continues from.
BOOST_AUTO_TEST_CASE(a_gone_box_resumes_from_the_checkpoint_already_in_the_project) {
  Setup s;
  json config = Setup::config();
  config["max_steps"] = 20;
  ferry::test::write_file(s.project / "cfg" / "tiny.json", config.dump());
  ferry::test::SpawnedProcess first(s.ferry({"train", "cfg/tiny.json", "--json", "--trainer", FERRY_TRAIN_BIN}), s.project.string());
  while (first.read_line(120s)) {
  }
  BOOST_TEST_REQUIRE(status_of(first.wait(60s)) == 0);
  BOOST_TEST_REQUIRE(fs::is_regular_file(s.project / "cfg" / "out" / "checkpoints" / step_name(20)));  // pulled back

  // The box is reclaimed; the project points at it still. The config asks for more steps.
  json cfg = json::parse(ferry::test::read_file(s.project / "ferry.json"));
  cfg["host"] = "box-gone";
  ferry::test::write_file(s.project / "ferry.json", cfg.dump());
  config["max_steps"] = 40;
  ferry::test::write_file(s.project / "cfg" / "tiny.json", config.dump());

  ferry::test::SpawnedProcess bare({"/bin/sh", "-c", std::string("exec '") + FERRY_BIN + "' resume 20261201-000000-0001 --host box-b 2>&1"},
                                   s.project.string());
  std::string text;
  while (auto line = bare.read_line(60s)) text += *line + "\n";
  BOOST_TEST(status_of(bare.wait(60s)) == 2);
  BOOST_TEST(text.find("the run's box box-gone does not answer") != std::string::npos, text);
  BOOST_TEST(text.find("give --config CONFIG") != std::string::npos, text);

  ferry::test::SpawnedProcess resume(s.ferry({"resume", "20261201-000000-0001", "--config", "cfg/tiny.json", "--host", "box-b",
                                              "--trainer", FERRY_TRAIN_BIN, "--json"}),
                                     s.project.string());
  json started;
  while (auto line = resume.read_line(120s)) {
    auto j = json::parse(*line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.value("event", "") == "start") started = j;
  }
  BOOST_TEST_REQUIRE(status_of(resume.wait(60s)) == 0);
  BOOST_TEST(started.value("resumed", false));
  BOOST_TEST(started.value("step", -1) == 20);
  BOOST_TEST(fs::is_regular_file(s.b.home() / "proj" / "cfg" / "out" / "checkpoints" / step_name(40)));
}

// `ferry train --hosts a,b` over two real sshd fixtures on two loopback addresses (127.0.0.1 and
// 127.0.0.2) as two hosts, one rank each, Gloo on CPU: the final parameters (and the optimizer
// state) equal a single-host `ferry-train --nproc 2` run of the same config bit for bit; killing
// one rank's process stops the other, and ferry names the rank and host that failed first.
#define BOOST_TEST_MODULE train_hosts
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "tests/integration/checkpoint_tensors.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/spawned_process.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::test::checkpoint_tensors;
using ferry::test::SshdFixture;
using ferry::test::SshdOptions;
using nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

int status_of(std::optional<int> st) {
  BOOST_TEST_REQUIRE(st.has_value());
  return WIFEXITED(*st) ? WEXITSTATUS(*st) : 128 + WTERMSIG(*st);
}

SshdOptions at(const std::string& address) {
  SshdOptions o;
  o.address = address;
  return o;
}

// Two boxes, box-a and box-b, in one ssh config (each fixture's own Host block, renamed).
struct TwoBoxes {
  SshdFixture a{at("127.0.0.1")};
  SshdFixture b{at("127.0.0.2")};
  ferry::test::TempDir dir{"ferry-train-hosts"};
  fs::path ssh_config = dir / "ssh_config";
  TwoBoxes() {
    a.trust_host_key();
    b.trust_host_key();
    std::string text = a.ssh_config_as("box-a") + "\n" + b.ssh_config_as("box-b") + "\n";
    ferry::test::write_file(ssh_config, text);
  }
};

json tiny_config(int max_steps) {
  return {{"model", {{"kind", "mlp"}, {"input_dim", 8}, {"hidden", {16}}, {"output_dim", 2}}},
          {"data", {{"source", "synthetic"}, {"task", "classification"}, {"samples", 256}, {"workers", 0}}},
          {"optimizer", {{"kind", "adamw"}, {"lr", 0.01}}},
          {"batch_size", 16},
          {"max_steps", max_steps},
          {"log_every_steps", 1},
          {"threads", 1},
          {"seed", 7},
          {"device", "cpu"},
          {"output_dir", "out"}};
}

void write_project(const fs::path& dir, const fs::path& ssh_config, int max_steps) {
  ferry::test::write_file(dir / "ferry.json", json{{"name", "train-hosts"},
                                                   {"host", "box-a"},
                                                   {"sshConfig", ssh_config.string()},
                                                   {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}}
                                                  .dump());
  ferry::test::write_file(dir / "tiny.json", tiny_config(max_steps).dump());
}

// ferry-train processes of this test's rendezvous (MASTER_PORT in their environment), by RANK.
std::map<int, pid_t> trainer_ranks(int master_port) {
  std::map<int, pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmd(e.path() / "cmdline");
    std::string argv0;
    std::getline(cmd, argv0, '\0');
    if (argv0 != FERRY_TRAIN_BIN) continue;
    std::ifstream env(e.path() / "environ");
    std::string var, rank;
    bool ours = false;
    while (std::getline(env, var, '\0')) {
      if (var == "MASTER_PORT=" + std::to_string(master_port)) ours = true;
      if (var.starts_with("RANK=")) rank = var.substr(5);
    }
    if (ours && !rank.empty()) out[std::stoi(rank)] = std::stoi(name);
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(two_hosts_end_with_the_parameters_of_one_host_with_two_processes) {
  TwoBoxes boxes;
  write_project(boxes.dir.path(), boxes.ssh_config, 12);
  const int port = ferry::test::pick_free_port();
  ferry::test::SpawnedProcess train({FERRY_BIN, "train", "tiny.json", "--hosts", "box-a,box-b", "--trainer", FERRY_TRAIN_BIN,
                                     "--master-port", std::to_string(port), "--json"},
                                    boxes.dir.path().string());
  int steps = 0;
  json start;
  while (auto line = train.read_line(120s)) {
    auto j = json::parse(*line, nullptr, false);
    if (j.is_discarded() || !j.contains("event")) continue;
    if (j["event"] == "start") start = j;
    if (j["event"] == "step") ++steps;
  }
  BOOST_TEST_REQUIRE(status_of(train.wait(60s)) == 0);
  BOOST_TEST(start.value("world_size", 0) == 2);
  BOOST_TEST(steps == 12);
  // Rank 1 ran on the second box (its own home), rank 0 on the first; the checkpoint came back.
  BOOST_TEST(fs::exists(boxes.b.home() / "proj" / "tiny.json"));
  const fs::path multi = boxes.dir / "out" / "checkpoints" / "ckpt-0000000012.ferry";
  BOOST_TEST_REQUIRE(fs::is_regular_file(multi));

  // The same config on one host (box-a, through ssh like the agent's runs: the box's environment,
  // whose BLAS may differ from this shell's) with two processes.
  const fs::path single = boxes.a.home() / "single";
  ferry::test::write_file(single / "tiny.json", tiny_config(12).dump());
  ferry::test::run_command("ssh -F " + boxes.ssh_config.string() + " box-a 'cd " + single.string() + " && " + FERRY_TRAIN_BIN +
                           " tiny.json --nproc 2 > log 2>&1'");
  auto a = checkpoint_tensors(multi);
  auto b = checkpoint_tensors(single / "out" / "checkpoints" / "ckpt-0000000012.ferry");
  BOOST_TEST_REQUIRE(a.size() == b.size());
  BOOST_TEST_REQUIRE(a.size() > 4u);  // weights, biases and AdamW's moments
  for (std::size_t i = 0; i < a.size(); ++i) {
    BOOST_TEST_INFO(a[i].first);
    BOOST_TEST(a[i].first == b[i].first);
    BOOST_TEST(a[i].second.sizes() == b[i].second.sizes());
    BOOST_TEST(std::memcmp(a[i].second.data_ptr(), b[i].second.data_ptr(), a[i].second.nbytes()) == 0);
  }
}

BOOST_AUTO_TEST_CASE(killing_one_rank_stops_the_other_and_names_it) {
  TwoBoxes boxes;
  write_project(boxes.dir.path(), boxes.ssh_config, 100000000);
  const int port = ferry::test::pick_free_port();
  ferry::test::SpawnedProcess train({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", FERRY_BIN, "train", "tiny.json", "--hosts",
                                     "box-a,box-b", "--trainer", FERRY_TRAIN_BIN, "--master-port", std::to_string(port), "--json"},
                                    boxes.dir.path().string());
  std::string text;
  bool stepping = false;
  while (auto line = train.read_line(120s)) {
    text += *line + "\n";
    if (line->find("\"event\":\"step\"") != std::string::npos) {
      stepping = true;
      break;
    }
  }
  BOOST_TEST_REQUIRE(stepping, text);
  auto ranks = trainer_ranks(port);
  BOOST_TEST_REQUIRE(ranks.size() == 2u);
  BOOST_TEST_REQUIRE(::kill(ranks.at(1), SIGKILL) == 0);
  while (auto line = train.read_line(120s)) text += *line + "\n";
  BOOST_TEST_INFO(text);
  BOOST_TEST(status_of(train.wait(60s)) == 128 + SIGKILL);
  BOOST_TEST(text.find("rank 1 on box-b failed first") != std::string::npos);
  BOOST_TEST(trainer_ranks(port).empty());  // rank 0 was stopped too
}

// Ctrl-C stops every rank with one checkpoint (rank 0's, pulled back); --resume takes it to the
// other host with the sync and every rank continues from it to the end.
BOOST_AUTO_TEST_CASE(ctrl_c_checkpoints_once_and_resume_continues_on_every_host) {
  TwoBoxes boxes;
  json config = tiny_config(3000);
  config["model"] = {{"kind", "mlp"}, {"input_dim", 64}, {"hidden", {256, 256}}, {"output_dim", 4}};
  config["data"]["samples"] = 4096;
  config["batch_size"] = 64;
  config["log_every_steps"] = 10;
  write_project(boxes.dir.path(), boxes.ssh_config, 3000);
  ferry::test::write_file(boxes.dir / "tiny.json", config.dump());
  const int port = ferry::test::pick_free_port();
  const std::vector<std::string> argv = {FERRY_BIN, "train", "tiny.json", "--hosts", "box-a,box-b", "--trainer", FERRY_TRAIN_BIN,
                                         "--master-port", std::to_string(port), "--json"};
  std::int64_t stopped_at = -1;
  {
    ferry::test::SpawnedProcess train(argv, boxes.dir.path().string());
    bool sent = false;
    while (auto line = train.read_line(120s)) {
      auto j = json::parse(*line, nullptr, false);
      if (j.is_discarded() || !j.contains("event")) continue;
      if (j["event"] == "step" && !sent) {
        train.signal(SIGINT);
        sent = true;
      }
      if (j["event"] == "checkpoint") stopped_at = j.value("step", std::int64_t{-1});
    }
    BOOST_TEST_REQUIRE(sent);
    BOOST_TEST_REQUIRE(status_of(train.wait(60s)) == 130);
  }
  BOOST_TEST_REQUIRE(stopped_at > 0);
  BOOST_TEST_REQUIRE(stopped_at < 3000);
  BOOST_TEST(fs::is_regular_file(boxes.dir / "out" / "checkpoints" / ("ckpt-" + std::string(10 - std::to_string(stopped_at).size(), '0') +
                                                                     std::to_string(stopped_at) + ".ferry")));
  std::vector<std::string> resume = argv;
  resume[8] = std::to_string(ferry::test::pick_free_port());
  resume.push_back("--resume");
  ferry::test::SpawnedProcess again(resume, boxes.dir.path().string());
  json start, done;
  while (auto line = again.read_line(300s)) {
    auto j = json::parse(*line, nullptr, false);
    if (j.is_discarded() || !j.contains("event")) continue;
    if (j["event"] == "start") start = j;
    if (j["event"] == "done") done = j;
  }
  BOOST_TEST_REQUIRE(status_of(again.wait(60s)) == 0);
  BOOST_TEST(start.value("resumed", false));
  BOOST_TEST(start.value("step", std::int64_t{0}) == stopped_at);
  BOOST_TEST(!done.is_null());
  // The second host resumed from the same checkpoint: the sync brought it there.
  BOOST_TEST(fs::exists(boxes.b.home() / "proj" / "out" / "checkpoints"));
}

// --nproc-per-host without --hosts: two ranks on the project's one host (LOCAL_RANK 0 and 1),
// the same parameters as ferry-train's own --nproc 2 there.
BOOST_AUTO_TEST_CASE(two_processes_on_one_host_match_ferry_train_nproc) {
  TwoBoxes boxes;
  write_project(boxes.dir.path(), boxes.ssh_config, 12);
  ferry::test::SpawnedProcess train({FERRY_BIN, "train", "tiny.json", "--nproc-per-host", "2", "--trainer", FERRY_TRAIN_BIN,
                                     "--master-port", std::to_string(ferry::test::pick_free_port()), "--json"},
                                    boxes.dir.path().string());
  json start;
  while (auto line = train.read_line(120s)) {
    auto j = json::parse(*line, nullptr, false);
    if (!j.is_discarded() && j.value("event", "") == "start") start = j;
  }
  BOOST_TEST_REQUIRE(status_of(train.wait(60s)) == 0);
  BOOST_TEST(start.value("world_size", 0) == 2);
  BOOST_TEST(!fs::exists(boxes.b.home() / "proj"));  // box-b was not involved
  // `ferry runs` shows the two ranks as one group.
  ferry::test::SpawnedProcess runs({FERRY_BIN, "runs", "--json"}, boxes.dir.path().string());
  std::string listed;
  while (auto line = runs.read_line(60s)) listed += *line + "\n";
  BOOST_TEST_REQUIRE(status_of(runs.wait(60s)) == 0);
  auto list = json::parse(listed, nullptr, false);
  BOOST_TEST_REQUIRE(list.is_array(), listed);
  BOOST_TEST_REQUIRE(list.size() == 2u, listed);
  BOOST_TEST(list[0].value("group", "").starts_with("train-"));
  BOOST_TEST(list[0].value("group", "") == list[1].value("group", "x"));
  std::set<std::string> labels{list[0].value("label", ""), list[1].value("label", "")};
  BOOST_TEST(labels == (std::set<std::string>{"rank 0 of 2 on box-a", "rank 1 of 2 on box-a"}));
  ferry::test::SpawnedProcess table({FERRY_BIN, "runs"}, boxes.dir.path().string());
  std::string text;
  while (auto line = table.read_line(60s)) text += *line + "\n";
  table.wait(60s);
  BOOST_TEST(text.find("group " + list[0].value("group", "") + " (2 runs on this host)") != std::string::npos, text);
  BOOST_TEST(text.find("[rank 1 of 2 on box-a]") != std::string::npos, text);
  const fs::path single = boxes.a.home() / "single";
  ferry::test::write_file(single / "tiny.json", tiny_config(12).dump());
  ferry::test::run_command("ssh -F " + boxes.ssh_config.string() + " box-a 'cd " + single.string() + " && " + FERRY_TRAIN_BIN +
                           " tiny.json --nproc 2 > log 2>&1'");
  auto a = checkpoint_tensors(boxes.dir / "out" / "checkpoints" / "ckpt-0000000012.ferry");
  auto b = checkpoint_tensors(single / "out" / "checkpoints" / "ckpt-0000000012.ferry");
  BOOST_TEST_REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    BOOST_TEST_INFO(a[i].first);
    BOOST_TEST(std::memcmp(a[i].second.data_ptr(), b[i].second.data_ptr(), a[i].second.nbytes()) == 0);
  }
}
